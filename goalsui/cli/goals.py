"""``goalsui goal ...``: create (from templates), list and steer goals."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from goalsui.cli.common import (
    Subparsers,
    answer,
    command,
    group,
    local,
    open_service,
    print_capability_warnings,
    read_text_arg,
    table,
)
from goalsui.cli.worker_options import add_worker_options, worker_seeds
from goalsui.domain.untrusted import plain

if TYPE_CHECKING:
    from goalsui.domain.views import GoalView

CREATE_HELP = "create a goal tree in the KB, with its workers"
CREATE_ABOUT = (
    "Create a goal from templates (protocol.md, state.yaml, each worker's prompt.md). "
    "Each --worker NAME starts a worker; the schedule and runner options after it "
    "are that worker's. All or nothing: on any error, nothing is left behind."
)


def register(sub: Subparsers) -> None:
    gsub = group(sub, "goal", "create, list and steer goals")
    create = command(gsub, "create", cmd_create, CREATE_HELP, "name", description=CREATE_ABOUT)
    create.add_argument("--task", required=True, help="what the goal is for")
    protocol = "protocol.md's text (@FILE or -); default: a template"
    create.add_argument("--protocol", metavar="@FILE", help=protocol)
    add_worker_options(create, repeat=True)
    create.add_argument("--owner", default="")
    command(gsub, "list", cmd_list, "list goals")
    for action, help_text in (
        ("show", "show one goal and its workers"),
        ("pause", "pause a goal (its workers stop firing)"),
        ("resume", "resume a paused goal"),
        ("complete", "mark a goal completed"),
        ("delete", "delete a goal tree from the KB"),
    ):
        command(gsub, action, cmd_goal_action, help_text, "goal_id").set_defaults(action=action)


def goal_text(view: GoalView) -> str:
    lines = [f"{view.goal_id}  {plain(view.name)}  [{view.status}]"]
    if view.task:
        lines.append(f"  task: {plain(view.task)}")
    lines.append(f"  path: {plain(view.path)}")
    if view.error:
        lines.append(f"  error: {plain(view.error)}")
    rows = [
        [w.name, w.schedule, w.timezone, w.status, local(w.next_run_at), w.intent_id]
        for w in view.workers
    ]
    if rows:
        lines.append(table(rows, ["worker", "schedule", "tz", "status", "next run", "intent"]))
    return "\n".join(lines)


def cmd_create(args: argparse.Namespace) -> int:
    seeds = worker_seeds(args)
    protocol = read_text_arg(args.protocol) if args.protocol is not None else None
    service = open_service(args)
    view = service.goals.create(args.name, args.task, seeds, protocol=protocol, owner=args.owner)
    answer(args, view.as_json(), goal_text(view))
    print_capability_warnings(service, view.goal_id)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    goals = open_service(args).goals.list()
    rows = []
    for g in goals:
        nxt = min((w.next_run_at for w in g.workers if w.next_run_at), default=None)
        rows.append(
            [g.goal_id, plain(g.name), "error" if g.error else g.status, len(g.workers), local(nxt)]
        )
    text = table(rows, ["goal", "name", "status", "workers", "next run"], "no goals")
    return answer(args, [g.as_json() for g in goals], text)


def cmd_goal_action(args: argparse.Namespace) -> int:
    service = open_service(args)
    if args.action == "delete":
        service.goals.get(args.goal_id)  # a missing goal is "not found" before anything goes
        service.goals.delete(args.goal_id)
        return answer(args, {"deleted": args.goal_id}, f"deleted goal {args.goal_id}")
    view = getattr(service.goals, "get" if args.action == "show" else args.action)(args.goal_id)
    return answer(args, view.as_json(), goal_text(view))
