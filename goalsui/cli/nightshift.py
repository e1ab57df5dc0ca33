"""``goalsui nightshift ...``: bind a goal to a repository, plan, replay, approve, reject."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

from goalsui.cli.common import add_json, answer, open_service, print_json, table
from goalsui.domain.nightshift import parse_night
from goalsui.domain.untrusted import plain
from goalsui.errors import ValidationError

#: ``--night``: a night is named by the date it starts (noon to noon, goal's timezone).
NIGHT_HELP = (
    "the night, named by the date it starts (YYYY-MM-DD; default: the current night, "
    "which before noon is the one that began the evening before)"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    night = sub.add_parser("nightshift", help="a nightshift on a git repository")
    nsub = night.add_subparsers(dest="nightshift_command", metavar="ACTION", required=True)

    init = nsub.add_parser("init", help="create a nightshift goal bound to a git work tree")
    init.add_argument("repo", type=Path, help="the top of a git work tree")
    init.add_argument("--base", help="the branch tasks start from (default: the current one)")
    init.add_argument("--tz", default="UTC", help="IANA timezone of the night's schedule")
    runner = init.add_mutually_exclusive_group()
    runner.add_argument("--runner", metavar="PRESET", help="an agent CLI preset, e.g. claude")
    runner.add_argument("--command", metavar="ARGV", help="a runner command line (shell words)")
    init.add_argument("--workers", type=int, default=3, help="task workers (1-12, default 3)")
    init.add_argument("--check", metavar="ARGV", help="run in each task's worktree afterwards")
    init.add_argument("--name", help="the goal's name (default: Nightshift <repo>)")
    add_json(init)
    init.set_defaults(func=cmd_init)

    plan = nsub.add_parser("plan", help="list the plan (or 'plan add WORKER TASK')")
    plan.add_argument("--goal", help="the nightshift goal (default: the KB's only one)")
    plan.add_argument("--night", help="only this night, named by the date it starts (YYYY-MM-DD)")
    add_json(plan)
    plan.set_defaults(func=cmd_plan)
    psub = plan.add_subparsers(dest="plan_command", metavar="ACTION")
    add = psub.add_parser("add", help="put a task into a night's plan")
    add.add_argument("worker")
    add.add_argument("task")
    add.add_argument("--night", help=NIGHT_HELP)
    add.add_argument("--reason", help="why (recorded in state.yaml decisions)")
    add.add_argument("--goal", help="the nightshift goal (default: the KB's only one)")
    add_json(add)
    add.set_defaults(func=cmd_plan_add)

    branches = nsub.add_parser("branches", help="the branches the nights produced")
    branches.add_argument("--goal")
    add_json(branches)
    branches.set_defaults(func=cmd_branches)

    for action, help_text in (
        ("diff", "print a branch's diff against the base"),
        ("approve", "merge a branch into the base (merge commit)"),
        ("reject", "delete a branch"),
    ):
        p = nsub.add_parser(action, help=help_text)
        p.add_argument("branch")
        p.add_argument("--goal")
        if action == "approve":
            p.add_argument(
                "--sha",
                help="merge this commit of the branch (one you reviewed) instead of the one "
                "goalsui recorded when the task ended",
            )
        add_json(p)
        p.set_defaults(func=cmd_branch_action, action=action)

    trust = nsub.add_parser(
        "trust", help="accept the goal's nightshift.yaml as it is now (repo, base, check)"
    )
    trust.add_argument("--goal")
    add_json(trust)
    trust.set_defaults(func=cmd_trust)

    replay = nsub.add_parser("replay", help="run a whole night now on a fast clock")
    replay.add_argument("--night", help=NIGHT_HELP)
    replay.add_argument("--goal")
    add_json(replay)
    replay.set_defaults(func=cmd_replay)


def _runner(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.runner:
        return {"agent": args.runner}
    if args.command:
        try:
            argv = shlex.split(args.command)
        except ValueError as exc:
            raise ValidationError(f"invalid --command: {exc}") from None
        if not argv:
            raise ValidationError("--command is empty")
        return {"command": argv}
    return None


def cmd_init(args: argparse.Namespace) -> int:

    check = shlex.split(args.check) if args.check else None
    with closing(open_service(args)) as service:
        view = service.nightshift.init(
            args.repo,
            base=args.base,
            tz=args.tz,
            runner=_runner(args),
            workers=args.workers,
            name=args.name,
            check=check,
        )
    return answer(
        args,
        view.as_json(),
        f"created nightshift goal {view.goal_id} ({len(view.workers)} workers)",
    )


def cmd_plan(args: argparse.Namespace) -> int:

    night = parse_night(args.night) if args.night else None
    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        items = service.nightshift.plan(goal_id, night)
    if args.json:
        print_json([i.as_json() for i in items])
        return 0
    rows = [
        [i.night, i.worker, plain(i.task, limit=60), i.status, i.branch or "-", i.run_id or "-"]
        for i in items
    ]
    print(
        table(rows, ["night", "worker", "task", "status", "branch", "run"])
        if rows
        else "no plan items"
    )
    return 0


def cmd_plan_add(args: argparse.Namespace) -> int:

    # a commander's turn is told its night (GOALSUI_NIGHT), which a replay sets
    given = args.night or os.environ.get("GOALSUI_NIGHT")
    night = parse_night(given) if given else None
    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        item, created = service.nightshift.plan_add(
            goal_id, args.worker, args.task, night=night, reason=args.reason
        )
    if args.json:
        print_json({**item.as_json(), "created": created})
    else:
        verb = "planned" if created else "already planned"
        print(f"{verb}: {item.night} {item.worker}: {plain(item.task, limit=80)}")
    return 0


def cmd_branches(args: argparse.Namespace) -> int:

    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        views = service.nightshift.branches(goal_id)
    if args.json:
        print_json([v.as_json() for v in views])
        return 0
    rows = [
        [
            v.branch,
            _commit_cell(v),
            v.commits,
            v.item.status if v.item else "-",
            v.item.check or "-" if v.item else "-",
            v.item.run_id or "-" if v.item else "-",
        ]
        for v in views
    ]
    headers = ["branch", "commit", "commits", "status", "check", "run"]
    print(table(rows, headers) if rows else "no branches")
    return 0


def _commit_cell(view: Any) -> str:
    """The reviewed commit; says when the branch moved since, or goalsui did not make it."""
    if view.reviewed is None:
        return "not made by goalsui"
    if view.moved:
        return f"{view.reviewed[:12]} (moved: now {str(view.tip)[:12]})"
    return str(view.reviewed[:12])


def cmd_branch_action(args: argparse.Namespace) -> int:

    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        if args.action == "diff":
            sys.stdout.write(plain(service.nightshift.diff(goal_id, args.branch)))
            return 0
        if args.action == "approve":
            message = service.nightshift.approve(goal_id, args.branch, sha=args.sha)
        else:
            message = service.nightshift.reject(goal_id, args.branch)
    return answer(args, {"branch": args.branch, "action": args.action, "message": message}, message)


def cmd_trust(args: argparse.Namespace) -> int:
    from goalsui.kb.nightshift import BINDING_FILE

    with closing(open_service(args)) as service:
        goal_id = args.goal or service.nightshift.goal()[0]
        binding = service.nightshift.trust(goal_id)
    if args.json:
        print_json({"goal_id": goal_id, **binding.as_yaml()})
    else:
        check = shlex.join(binding.check) if binding.check else "none"
        print(
            f"{goal_id}: {BINDING_FILE} accepted: repo {binding.repo}, base {binding.base}, check {check}"
        )
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from goalsui.domain.nightshift import night_window
    from goalsui.scheduler.replay import replay_isolated

    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        tz = service.nightshift.timezone(goal_id)
        night: date = (
            parse_night(args.night) if args.night else service.nightshift.current_night(tz)
        )
        start, end = night_window(night, tz)
        replay = asyncio.run(replay_isolated(service, goal_id, start, end))
        report = service.nightshift.report_path(goal_id, night)
    records = replay.records
    if args.json:
        print_json(
            {
                "night": night,
                "runs": [list(r) for r in replay.runs],
                "report": report,
                "records": records,
            }
        )
        return 0
    for worker, status in replay.runs:
        print(f"{worker or '-'}: {status}")
    print(
        f"the replay's runs are in {records} "
        f"(goalsui --state-dir {shlex.quote(str(records))} runs)",
        file=sys.stderr,
    )
    print(report if report.exists() else "no report was written (is there a reporter?)")
    return 0
