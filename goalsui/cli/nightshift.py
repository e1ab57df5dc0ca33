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

from goalsui.cli.common import (
    Subparsers,
    answer,
    command,
    group,
    open_service,
    split_argv,
    table,
)
from goalsui.domain.nightshift import night_window, parse_night
from goalsui.domain.untrusted import plain

#: ``--night``: a night is named by the date it starts (noon to noon, goal's timezone).
NIGHT_HELP = (
    "the night, named by the date it starts (YYYY-MM-DD; default: the current night, "
    "which before noon is the one that began the evening before)"
)
SHA_HELP = "merge this commit of the branch (one you reviewed) instead of the one goalsui recorded when the task ended"
GOAL_HELP = "the nightshift goal (default: the KB's only one)"


def register(sub: Subparsers) -> None:
    nsub = group(sub, "nightshift", "a nightshift on a git repository")
    init = command(nsub, "init", cmd_init, "create a nightshift goal bound to a git work tree")
    init.add_argument("repo", type=Path, help="the top of a git work tree")
    init.add_argument("--base", help="the branch tasks start from (default: the current one)")
    init.add_argument("--tz", default="UTC", help="IANA timezone of the night's schedule")
    runner = init.add_mutually_exclusive_group()
    runner.add_argument("--runner", metavar="PRESET", help="an agent CLI preset, e.g. claude")
    runner.add_argument("--command", metavar="ARGV", help="a runner command line (shell words)")
    init.add_argument("--workers", type=int, default=3, help="task workers (1-12, default 3)")
    init.add_argument("--check", metavar="ARGV", help="run in each task's worktree afterwards")
    init.add_argument("--name", help="the goal's name (default: Nightshift <repo>)")

    plan = command(nsub, "plan", cmd_plan, "list the plan (or 'plan add WORKER TASK')")
    plan.add_argument("--goal", help=GOAL_HELP)
    plan.add_argument("--night", help="only this night, named by the date it starts (YYYY-MM-DD)")
    psub = plan.add_subparsers(dest="plan_command", metavar="ACTION")
    add = command(psub, "add", cmd_plan_add, "put a task into a night's plan", "worker", "task")
    add.add_argument("--night", help=NIGHT_HELP)
    add.add_argument("--reason", help="why (recorded in state.yaml decisions)")
    add.add_argument("--goal", help=GOAL_HELP)
    for name, func, help_text in (
        ("branches", cmd_branches, "the branches the nights produced"),
        ("diff", cmd_branch_action, "print a branch's diff against the base"),
        ("approve", cmd_branch_action, "merge a branch into the base (merge commit)"),
        ("reject", cmd_branch_action, "delete a branch"),
        ("trust", cmd_trust, "accept the goal's nightshift.yaml as it is now (repo, base, check)"),
        ("replay", cmd_replay, "run a whole night now on a fast clock"),
    ):
        p = command(nsub, name, func, help_text, *(["branch"] if func is cmd_branch_action else []))
        p.add_argument("--goal", help=GOAL_HELP)
        p.set_defaults(action=name)
        if name == "approve":
            p.add_argument("--sha", help=SHA_HELP)
        if name == "replay":
            p.add_argument("--night", help=NIGHT_HELP)


def cmd_init(args: argparse.Namespace) -> int:
    check = split_argv(args.check, "--check") if args.check else None
    runner: dict[str, Any] | None = {"agent": args.runner} if args.runner else None
    if args.command:
        runner = {"command": split_argv(args.command, "--command")}
    with closing(open_service(args)) as service:
        view = service.nightshift.init(
            args.repo,
            base=args.base,
            tz=args.tz,
            runner=runner,
            workers=args.workers,
            name=args.name,
            check=check,
        )
    text = f"created nightshift goal {view.goal_id} ({len(view.workers)} workers)"
    return answer(args, view.as_json(), text)


def cmd_plan(args: argparse.Namespace) -> int:
    night = parse_night(args.night) if args.night else None
    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        items = service.nightshift.plan(goal_id, night)
    rows = [
        [i.night, i.worker, plain(i.task, limit=60), i.status, i.branch or "-", i.run_id or "-"]
        for i in items
    ]
    headers = ["night", "worker", "task", "status", "branch", "run"]
    return answer(args, [i.as_json() for i in items], table(rows, headers, "no plan items"))


def cmd_plan_add(args: argparse.Namespace) -> int:
    # a commander's turn is told its night (GOALSUI_NIGHT), which a replay sets
    given = args.night or os.environ.get("GOALSUI_NIGHT")
    night = parse_night(given) if given else None
    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        item, created = service.nightshift.plan_add(
            goal_id, args.worker, args.task, night=night, reason=args.reason
        )
    verb = "planned" if created else "already planned"
    text = f"{verb}: {item.night} {item.worker}: {plain(item.task, limit=80)}"
    return answer(args, {**item.as_json(), "created": created}, text)


def cmd_branches(args: argparse.Namespace) -> int:
    with closing(open_service(args)) as service:
        goal_id, _ = service.nightshift.goal(args.goal)
        views = service.nightshift.branches(goal_id)
    rows = []
    for v in views:
        item = v.item
        state = (item.status, item.check or "-", item.run_id or "-") if item else ("-", "-", "-")
        rows.append([v.branch, _commit_cell(v), v.commits, *state])
    headers = ["branch", "commit", "commits", "status", "check", "run"]
    return answer(args, [v.as_json() for v in views], table(rows, headers, "no branches"))


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
    check = shlex.join(binding.check) if binding.check else "none"
    text = f"{goal_id}: {BINDING_FILE} accepted: repo {binding.repo}, base {binding.base}, check {check}"
    return answer(args, {"goal_id": goal_id, **binding.as_yaml()}, text)


def cmd_replay(args: argparse.Namespace) -> int:
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
    if not args.json:
        where = f"goalsui --state-dir {shlex.quote(str(records))} runs"
        print(f"the replay's runs are in {records} ({where})", file=sys.stderr)
    runs = [f"{worker or '-'}: {status}" for worker, status in replay.runs]
    written = report if report.exists() else "no report was written (is there a reporter?)"
    data = {"night": night, "runs": [list(r) for r in replay.runs], "report": report}
    return answer(args, {**data, "records": records}, "\n".join([*runs, str(written)]))
