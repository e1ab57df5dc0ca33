"""``goalsui worker ...``: add, remove, pause, resume, show and run a goal's workers."""

from __future__ import annotations

import argparse
import json
import shlex
import time
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import (
    add_json,
    answer,
    local,
    open_service,
    print_capability_warnings,
    print_json,
)
from goalsui.cli.worker_options import add_worker_options, worker_seeds
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = sub.add_parser("worker", help="add, remove and steer a goal's workers")
    wsub = worker.add_subparsers(dest="worker_command", metavar="ACTION", required=True)

    add = wsub.add_parser("add", help="add a worker to a goal (its prompt from a template)")
    add.add_argument("goal_id")
    add.add_argument("worker")
    add_worker_options(add, repeat=False)
    add_json(add)
    add.set_defaults(func=cmd_add)

    for action, help_text in (
        ("remove", "delete a worker's folder and cancel its schedule"),
        ("pause", "pause a worker's schedule"),
        ("resume", "resume a paused or auto-disabled worker"),
        ("show", "a worker's schedule, definition and prompt"),
    ):
        p = wsub.add_parser(action, help=help_text)
        p.add_argument("goal_id")
        p.add_argument("worker")
        if action == "show":
            p.add_argument(
                "--argv",
                action="store_true",
                help="the argv, environment names and MCP config a turn would get",
            )
        add_json(p)
        p.set_defaults(func=cmd_action, action=action)

    run_now = wsub.add_parser("run-now", help="fire a worker now")
    run_now.add_argument("goal_id")
    run_now.add_argument("worker")
    run_now.add_argument(
        "--wait",
        action="store_true",
        help="wait for the run this call triggers and print its result (needs a running "
        "scheduler: a daemon or a console on this KB; else use --here)",
    )
    run_now.add_argument(
        "--here",
        action="store_true",
        help="run a scheduler in this process until the run ends (implies --wait; other "
        "intents due meanwhile fire too)",
    )
    run_now.add_argument("--timeout", type=float, default=600, help=argparse.SUPPRESS)
    add_json(run_now)
    run_now.set_defaults(func=cmd_run_now)


def cmd_add(args: argparse.Namespace) -> int:

    [seed] = worker_seeds(args)
    service = open_service(args)
    view = service.authoring.add_worker(args.goal_id, seed)
    if args.json:
        print_json({"goal_id": args.goal_id, **view.as_json(), "status": view.status})
    else:
        print(
            f"worker {view.name} added to {args.goal_id}: {view.kind} {view.schedule} "
            f"({view.timezone}), next {local(view.next_run_at)}"
        )
    print_capability_warnings(service, args.goal_id, view.name)
    return 0


def cmd_action(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import intent_json

    service = open_service(args)
    if args.action == "show" and args.argv:
        return _show_turn(service, args)
    if args.action == "show":
        detail = service.authoring.show_worker(args.goal_id, args.worker)
        if args.json:
            print_json(detail.as_json())
            return 0
        v = detail.view
        print(f"{args.goal_id}/{v.name}  [{v.status}]  {v.kind} {plain(v.schedule)} ({v.timezone})")
        print(f"  next run: {local(v.next_run_at)}   intent: {v.intent_id}")
        if detail.last_error:
            print(f"  last error: {plain(detail.last_error)}")
        print("\n--- definition.yaml\n" + plain(detail.definition).rstrip())
        print("\n--- prompt.md\n" + plain(detail.prompt).rstrip())
        return 0
    if args.action == "remove":
        service.authoring.remove_worker(args.goal_id, args.worker)
        return answer(
            args,
            {"removed": f"{args.goal_id}/{args.worker}"},
            f"removed worker {args.worker} of {args.goal_id}",
        )
    intent = getattr(service.authoring, f"{args.action}_worker")(args.goal_id, args.worker)
    return answer(
        args,
        intent_json(intent.record()),
        f"worker {args.worker} of {args.goal_id}: {intent.status}",
    )


def _show_turn(service: Service, args: argparse.Namespace) -> int:
    """``worker show G W --argv``: what the worker's next turn would be given."""
    from goalsui.runners.preview import preview_worker_turn

    preview = preview_worker_turn(service, args.goal_id, args.worker)
    if args.json:
        print_json(preview.as_json())
        return 0
    if not preview.argv:
        print(f"{args.goal_id}/{args.worker}: no runner configured (see docs/agents.md)")
        return 0
    print("argv:  " + plain(shlex.join(preview.argv)))
    print("env:   " + " ".join(preview.env))
    tools = "yes (goalsui's tools)" if preview.gets_tools else "no (a plain command)"
    print(f"tools: {tools}")
    for name, document in preview.configs.items():
        print(f"--- {{{name}}}\n" + plain(json.dumps(document, indent=2)))
    return 0


def cmd_run_now(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import intent_json

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
        return answer(
            args,
            intent_json(intent.record()),
            f"worker {args.worker} of {args.goal_id} is due now (intent {intent.id})",
        )
    import asyncio

    run = asyncio.run(_await_run(service, ticket, args.timeout, here=args.here))
    if run is None:
        raise ValidationError(
            f"the run of intent {intent.id} did not finish within {args.timeout:g}s "
            "(it goes on; see 'goalsui runs --intent "
            f"{intent.id}')"
        )
    return _report_run(args, run)


def _report_run(args: argparse.Namespace, run: Any) -> int:
    from goalsui.domain.shapes import run_json

    if args.json:
        print_json(run_json(run.record()))
    else:
        print(f"run {run.id}: {run.status}" + (f" ({plain(run.reason)})" if run.reason else ""))
    return 0 if run.status in (RunStatus.OK, RunStatus.SILENT) else 1


def _finished(service: Service, ticket: Any) -> Any:
    run = service.workers.ticket_run(ticket)
    return run if run is not None and run.status != RunStatus.RUNNING else None


async def _await_run(service: Service, ticket: Any, timeout: float, *, here: bool) -> Any:
    """The ticket's finished run (None: not within ``timeout``); with ``here``, a registered
    scheduler runs in this process meanwhile."""
    import asyncio
    import contextlib

    from goalsui.scheduler.loop import Scheduler

    async with contextlib.AsyncExitStack() as stack:
        if here:
            scheduler = Scheduler(service)
            await scheduler.start()
            stack.push_async_callback(scheduler.stop)
            stack.callback(service.schedulers.register("run-now", scheduler.owner).close)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = await asyncio.to_thread(_finished, service, ticket)
            if run is not None:
                return run
            await asyncio.sleep(0.1)
    return None
