"""``goalsui goal ...``: create (from templates), list and steer goals."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from goalsui.cli.common import (
    add_json,
    answer,
    local,
    open_service,
    print_capability_warnings,
    print_json,
    read_text_arg,
    table,
)
from goalsui.cli.worker_options import add_worker_options, worker_seeds
from goalsui.domain.untrusted import plain

if TYPE_CHECKING:
    from goalsui.service import GoalView


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    goal = sub.add_parser("goal", help="create, list and steer goals")
    gsub = goal.add_subparsers(dest="goal_command", metavar="ACTION", required=True)

    create = gsub.add_parser(
        "create",
        help="create a goal tree in the KB, with its workers",
        description=(
            "Create a goal from templates (protocol.md, state.yaml, each worker's prompt.md). "
            "Each --worker NAME starts a worker; the schedule and runner options after it "
            "are that worker's. All or nothing: on any error, nothing is left behind."
        ),
    )
    create.add_argument("name")
    create.add_argument("--task", required=True, help="what the goal is for")
    create.add_argument(
        "--protocol", metavar="@FILE", help="protocol.md's text (@FILE or -); default: a template"
    )
    add_worker_options(create, repeat=True)
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


def print_goal(view: GoalView) -> None:
    print(f"{view.goal_id}  {plain(view.name)}  [{view.status}]")
    if view.task:
        print(f"  task: {plain(view.task)}")
    print(f"  path: {plain(view.path)}")
    if view.error:
        print(f"  error: {plain(view.error)}")
    rows = [
        [w.name, w.schedule, w.timezone, w.status, local(w.next_run_at), w.intent_id]
        for w in view.workers
    ]
    if rows:
        print(table(rows, ["worker", "schedule", "tz", "status", "next run", "intent"]))


def cmd_create(args: argparse.Namespace) -> int:

    seeds = worker_seeds(args)
    protocol = read_text_arg(args.protocol) if args.protocol is not None else None
    service = open_service(args)
    view = service.goals.create(args.name, args.task, seeds, protocol=protocol, owner=args.owner)
    if args.json:
        print_json(view.as_json())
    else:
        print_goal(view)
    print_capability_warnings(service, view.goal_id)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    service = open_service(args)
    goals = service.goals.list()
    if args.json:
        print_json([g.as_json() for g in goals])
        return 0
    rows = []
    for g in goals:
        nxt = min((w.next_run_at for w in g.workers if w.next_run_at), default=None)
        rows.append(
            [g.goal_id, plain(g.name), "error" if g.error else g.status, len(g.workers), local(nxt)]
        )
    print(table(rows, ["goal", "name", "status", "workers", "next run"]) if rows else "no goals")
    return 0


def cmd_goal_action(args: argparse.Namespace) -> int:
    service = open_service(args)
    action = args.action
    if action == "show":
        view = service.goals.get(args.goal_id)
    elif action == "delete":
        view = service.goals.get(args.goal_id)
        service.goals.delete(args.goal_id)
        return answer(args, {"deleted": args.goal_id}, f"deleted goal {args.goal_id}")
    else:
        view = getattr(service.goals, action)(args.goal_id)
    if args.json:
        print_json(view.as_json())
    else:
        print_goal(view)
    return 0
