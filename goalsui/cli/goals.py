"""``goalsui goal ...`` and ``goalsui worker ...``."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from goalsui.cli.common import add_json, local, open_service, print_json, table
from goalsui.domain.timeutil import load_zone
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.kb.paths import check_name

if TYPE_CHECKING:
    from goalsui.kb.layout import WorkerSeed
    from goalsui.service import GoalView


def register(sub: argparse._SubParsersAction) -> None:
    goal = sub.add_parser("goal", help="create, list and steer goals")
    gsub = goal.add_subparsers(dest="goal_command", metavar="ACTION", required=True)

    create = gsub.add_parser("create", help="create a goal tree in the KB")
    create.add_argument("name")
    create.add_argument("--task", required=True, help="what the goal is for")
    create.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="NAME=CRON",
        help="a worker and its cron schedule (repeatable), e.g. scout='30 20 * * *'",
    )
    create.add_argument("--tz", default="UTC", help="IANA timezone of the workers' schedules")
    create.add_argument("--owner", default="")
    add_json(create)
    create.set_defaults(func=cmd_create)

    lst = gsub.add_parser("list", help="list goals")
    add_json(lst)
    lst.set_defaults(func=cmd_list)

    for action, help_text in (
        ("show", "show one goal and its workers"),
        ("pause", "pause a goal (its workers stop firing)"),
        ("resume", "resume a paused goal"),
        ("complete", "mark a goal completed"),
        ("delete", "delete a goal tree from the KB"),
    ):
        p = gsub.add_parser(action, help=help_text)
        p.add_argument("goal_id")
        add_json(p)
        p.set_defaults(func=cmd_goal_action, action=action)

    worker = sub.add_parser("worker", help="act on a goal's workers")
    wsub = worker.add_subparsers(dest="worker_command", metavar="ACTION", required=True)
    run_now = wsub.add_parser("run-now", help="fire a worker now")
    run_now.add_argument("goal_id")
    run_now.add_argument("worker")
    run_now.add_argument("--wait", action="store_true", help="wait for the run to finish")
    run_now.add_argument("--timeout", type=float, default=600, help=argparse.SUPPRESS)
    add_json(run_now)
    run_now.set_defaults(func=cmd_worker_run_now)


def _parse_workers(specs: list[str], tz: str) -> list[WorkerSeed]:
    """``NAME=CRON`` options as worker seeds, each checked before anything is written."""
    from goalsui.domain.cron import validate_cron
    from goalsui.kb.layout import WorkerSeed

    load_zone(tz)
    seeds = []
    for spec in specs:
        name, sep, cron = spec.partition("=")
        if not sep or not name.strip() or not cron.strip():
            raise ValidationError(
                f"invalid --worker {spec!r}: use NAME=CRON, e.g. scout='30 20 * * *'"
            )
        check_name(name.strip(), "worker name")
        try:
            validate_cron(cron.strip())
        except GoalsuiError as exc:
            raise ValidationError(f"invalid --worker {name.strip()!r}: {exc}") from None
        seeds.append(
            WorkerSeed(
                name=name.strip(),
                definition={"schedule": {"cron": cron.strip(), "timezone": tz}, "timeout": "10m"},
            )
        )
    return seeds


def print_goal(view: GoalView) -> None:
    print(f"{view.goal_id}  {view.name}  [{view.status}]")
    if view.task:
        print(f"  task: {view.task}")
    print(f"  path: {view.path}")
    if view.error:
        print(f"  error: {view.error}")
    rows = [
        [w.name, w.schedule, w.timezone, w.status, local(w.next_run_at), w.intent_id]
        for w in view.workers
    ]
    if rows:
        print(table(rows, ["worker", "schedule", "tz", "status", "next run", "intent"]))


def cmd_create(args: argparse.Namespace) -> int:
    seeds = _parse_workers(args.worker, args.tz)
    service = open_service(args)
    view = service.setup_goal(args.name, args.task, seeds, owner=args.owner)
    if args.json:
        print_json(view.as_json())
    else:
        print_goal(view)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    service = open_service(args)
    goals = service.list_goals()
    if args.json:
        print_json([g.as_json() for g in goals])
        return 0
    rows = []
    for g in goals:
        nxt = min((w.next_run_at for w in g.workers if w.next_run_at), default=None)
        rows.append(
            [g.goal_id, g.name, "error" if g.error else g.status, len(g.workers), local(nxt)]
        )
    print(table(rows, ["goal", "name", "status", "workers", "next run"]) if rows else "no goals")
    return 0


def cmd_goal_action(args: argparse.Namespace) -> int:
    service = open_service(args)
    action = args.action
    if action == "show":
        view = service.get_goal(args.goal_id)
    elif action == "delete":
        view = service.get_goal(args.goal_id)
        service.delete_goal(args.goal_id)
        if args.json:
            print_json({"deleted": args.goal_id})
        else:
            print(f"deleted goal {args.goal_id}")
        return 0
    else:
        view = getattr(service, f"{action}_goal")(args.goal_id)
    if args.json:
        print_json(view.as_json())
    else:
        print_goal(view)
    return 0


def cmd_worker_run_now(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import intent_json, run_json

    service = open_service(args)
    intent = service.run_worker_now(args.goal_id, args.worker)
    if not args.wait:
        if args.json:
            print_json(intent_json(intent))
        else:
            print(f"worker {args.worker} of {args.goal_id} is due now (intent {intent.id})")
        return 0
    # Wait for a scheduler (console or daemon) to pick it up and finish it.
    before = {r.id for r in service.list_runs(intent_id=intent.id, limit=1000)}
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        runs = [r for r in service.list_runs(intent_id=intent.id, limit=20) if r.id not in before]
        done = [r for r in runs if r.status != "running"]
        if done:
            run = done[-1]
            if args.json:
                print_json(run_json(run))
            else:
                print(f"run {run.id}: {run.status}" + (f" ({run.reason})" if run.reason else ""))
            return 0 if run.status in ("ok", "silent") else 1
        time.sleep(0.5)
    raise ValidationError("no scheduler finished the run in time (is a console or daemon running?)")
