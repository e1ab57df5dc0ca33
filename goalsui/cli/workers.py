"""``goalsui worker ...``: add, remove, pause, resume, show and run a goal's workers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import time
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    answer,
    command,
    group,
    local,
    open_service,
    print_capability_warnings,
)
from goalsui.cli.worker_options import add_worker_options, worker_seeds
from goalsui.domain.shapes import intent_json, run_json
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service

ADD_HELP = "add a worker to a goal (its prompt from a template)"
WAIT_HELP = "wait for the run this call triggers and print its result (needs a running scheduler: a daemon or a console on this KB; else use --here)"
HERE_HELP = "run a scheduler in this process until the run ends (implies --wait; other intents due meanwhile fire too)"


def register(sub: Subparsers) -> None:
    wsub = group(sub, "worker", "add, remove and steer a goal's workers")
    add = command(wsub, "add", cmd_add, ADD_HELP, "goal_id", "worker")
    add_worker_options(add, repeat=False)
    for action, help_text in (
        ("remove", "delete a worker's folder and cancel its schedule"),
        ("pause", "pause a worker's schedule"),
        ("resume", "resume a paused or auto-disabled worker"),
        ("show", "a worker's schedule, definition and prompt"),
    ):
        p = command(wsub, action, cmd_action, help_text, "goal_id", "worker")
        p.set_defaults(action=action)
    add_flags(p, argv="the argv, environment names and MCP config a turn would get")  # to "show"
    run_now = command(wsub, "run-now", cmd_run_now, "fire a worker now", "goal_id", "worker")
    add_flags(run_now, wait=WAIT_HELP, here=HERE_HELP)
    run_now.add_argument("--timeout", type=float, default=600, help=argparse.SUPPRESS)


def cmd_add(args: argparse.Namespace) -> int:
    [seed] = worker_seeds(args)
    service = open_service(args)
    view = service.workers.add(args.goal_id, seed)
    text = (
        f"worker {view.name} added to {args.goal_id}: {view.kind} {view.schedule} "
        f"({view.timezone}), next {local(view.next_run_at)}"
    )
    answer(args, {"goal_id": args.goal_id, **view.as_json(), "status": view.status}, text)
    print_capability_warnings(service, args.goal_id, view.name)
    return 0


def cmd_action(args: argparse.Namespace) -> int:
    service = open_service(args)
    if args.action == "show" and args.argv:
        return _show_turn(service, args)
    if args.action == "show":
        detail = service.workers.show(args.goal_id, args.worker)
        v = detail.view
        error = f"\n  last error: {plain(detail.last_error)}" if detail.last_error else ""
        text = (
            f"{args.goal_id}/{v.name}  [{v.status}]  {v.kind} {plain(v.schedule)} ({v.timezone})\n"
            f"  next run: {local(v.next_run_at)}   intent: {v.intent_id}{error}\n"
            f"\n--- definition.yaml\n{plain(detail.definition).rstrip()}\n"
            f"\n--- prompt.md\n{plain(detail.prompt).rstrip()}"
        )
        return answer(args, detail.as_json(), text)
    if args.action == "remove":
        service.workers.remove(args.goal_id, args.worker)
        text = f"removed worker {args.worker} of {args.goal_id}"
        return answer(args, {"removed": f"{args.goal_id}/{args.worker}"}, text)
    intent = getattr(service.workers, args.action)(args.goal_id, args.worker)
    text = f"worker {args.worker} of {args.goal_id}: {intent.status}"
    return answer(args, intent_json(intent.record()), text)


def _show_turn(service: Service, args: argparse.Namespace) -> int:
    """``worker show G W --argv``: what the worker's next turn would be given."""
    from goalsui.runners.preview import preview_worker_turn

    preview = preview_worker_turn(service, args.goal_id, args.worker)
    tools = "yes (goalsui's tools)" if preview.gets_tools else "no (a plain command)"
    lines = [f"argv:  {plain(shlex.join(preview.argv))}", f"env:   {' '.join(preview.env)}"]
    lines.append(f"tools: {tools}")
    for name, document in preview.mcp_configs.items():
        lines.append(f"--- {{{name}}}\n" + plain(json.dumps(document, indent=2)))
    if not preview.argv:
        lines = [f"{args.goal_id}/{args.worker}: no runner configured (see docs/agents.md)"]
    return answer(args, preview.as_json(), "\n".join(lines))


def cmd_run_now(args: argparse.Namespace) -> int:
    service = open_service(args)
    wait = args.wait or args.here
    if wait and not args.here and not service.schedulers.live():
        raise ValidationError(
            "no scheduler is running on this KB (no daemon or console is registered in "
            f"{service.state_dir / 'schedulers'}): start 'goalsui daemon' or the console, "
            "or add --here to run the turn in this process"
        )
    ticket = service.workers.run_now_ticket(args.goal_id, args.worker)
    intent = ticket.intent
    if not wait:
        text = f"worker {args.worker} of {args.goal_id} is due now (intent {intent.id})"
        return answer(args, intent_json(intent.record()), text)
    run = asyncio.run(_await_run(service, ticket, args.timeout, here=args.here))
    if run is None:
        raise ValidationError(
            f"the run of intent {intent.id} did not finish within {args.timeout:g}s "
            f"(it goes on; see 'goalsui runs --intent {intent.id}')"
        )
    reason = f" ({plain(run.reason)})" if run.reason else ""
    answer(args, run_json(run.record()), f"run {run.id}: {run.status}{reason}")
    return 0 if run.status in (RunStatus.OK, RunStatus.SILENT) else 1


async def _await_run(service: Service, ticket: Any, timeout: float, *, here: bool) -> Any:
    """The ticket's finished run (None: not within ``timeout``); with ``here``, a registered
    scheduler runs in this process meanwhile."""
    from goalsui.scheduler.loop import Scheduler

    async with contextlib.AsyncExitStack() as stack:
        if here:
            scheduler = Scheduler(service)
            await scheduler.start()
            stack.push_async_callback(scheduler.stop)
            stack.callback(service.schedulers.register("run-now", scheduler.owner).close)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = await asyncio.to_thread(service.workers.ticket_run, ticket)
            if run is not None and run.status != RunStatus.RUNNING:
                return run
            await asyncio.sleep(0.1)
    return None
