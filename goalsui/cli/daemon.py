"""``goalsui daemon``: the scheduler without a console, one log line per run start and end."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    add_options,
    check_ranges,
    command,
    open_service,
    stop_on_signals,
)
from goalsui.errors import FatalError, ValidationError
from goalsui.ops.logging import LineWriter

GRACE_HELP = "on stop or cancel: seconds between SIGTERM and SIGKILL (default 5)"
LEASE_HELP = "lease of a claimed intent, renewed every S/3 while it runs (default 30)"
METRICS_HELP = "serve /metrics (Prometheus), /healthz and /readyz on this port"
POLL_HELP = "how often to look for other processes' changes (default 1, at most 1)"


def register(sub: Subparsers) -> None:
    p = command(sub, "daemon", cmd_daemon, "run the scheduler headless (no console)", json=False)
    add_options(
        p,
        ("--hooks-port", int, None, "N", "also listen for signed event hooks on this port"),
        ("--hooks-host", str, "127.0.0.1", "H", "hook listener address (default 127.0.0.1)"),
        ("--max-concurrency", int, 8, "N", "runs at once (default 8)"),
        ("--grace-seconds", float, 5.0, "S", GRACE_HELP),
        ("--lease-seconds", float, 30.0, "S", LEASE_HELP),
        ("--poll-interval", float, 1.0, "S", POLL_HELP),
        ("--metrics-port", int, None, "N", METRICS_HELP),
        ("--metrics-host", str, "127.0.0.1", "H", "metrics and health address (default 127.0.0.1)"),
    )
    add_flags(p, no_watch="do not re-read the KB when its files change")
    log_help = "log lines as text (default) or one JSON object per line"
    p.add_argument("--log-format", choices=("text", "json"), default="text", help=log_help)


def _check(args: argparse.Namespace) -> None:
    check_ranges(
        ("--hooks-port", args.hooks_port, 1, 65535),
        ("--max-concurrency", args.max_concurrency, 1, 1000),
        ("--lease-seconds", args.lease_seconds, 0.1, 3600),
        ("--grace-seconds", args.grace_seconds, 0, 600),
        ("--poll-interval", args.poll_interval, 0.05, 1),
        ("--metrics-port", args.metrics_port, 1, 65535),
    )
    if args.metrics_port is not None and args.metrics_port == args.hooks_port:
        raise ValidationError("--metrics-port and --hooks-port must differ")


#: One log line (text or JSON, see ``--log-format``); keyword fields only show in JSON.
say = LineWriter()
#: The scheduler's other events: (line, on stderr)
_EVENT_LINES = {
    "alert": ("ALERT intent {intent_id}: {message}", False),
    "error": ("scheduler error: {message}", True),
    "recovered": ("scheduler {message}", True),
}


def _run_log(on_fatal: Callable[[str], None]) -> Callable[[Any], None]:
    """A subscriber turning SchedulerEvents into log lines."""
    started: dict[int, datetime] = {}

    def log(event: Any) -> None:
        fields = {"event": event.kind, "run_id": event.run_id, "intent_id": event.intent_id}
        if event.kind == "run-started":
            started[event.run_id] = datetime.now()
            say(
                f"run {event.run_id} started: intent {event.intent_id} '{event.title}' ({event.trigger})",
                **fields,
            )
        elif event.kind == "run-finished":
            begun = started.pop(event.run_id, None)
            took = f" in {(datetime.now() - begun).total_seconds():.1f}s" if begun else ""
            what = f"run {event.run_id}" if event.run_id else "runs"
            say(
                f"{what} {event.status}{took}: intent {event.intent_id} - {event.message}",
                **fields,
                status=event.status,
            )
        elif event.kind in _EVENT_LINES:
            line, err = _EVENT_LINES[event.kind]
            say(
                line.format(intent_id=event.intent_id, message=event.message),
                err=err,
                event=event.kind,
            )
        elif event.kind == "fatal":
            on_fatal(event.message)

    return log


async def _watch_kb(service: Any) -> None:
    """Re-sync the KB index when a goal's or worker's definition or the KB config changes."""
    from goalsui.kb.watcher import KBWatcher

    async for batch in KBWatcher(service.kb.root).batches():
        whole = batch.config_changed
        changed = (c for c in batch.changes if c.goal_id and Path(c.rel).name == "definition.yaml")
        goals = sorted({str(c.goal_id) for c in changed})
        if not goals and not whole:
            continue
        try:
            problems = await asyncio.to_thread(service.index.sync, None if whole else goals)
        except Exception as exc:  # noqa: BLE001 - a bad edit never stops the daemon
            say(f"KB re-read failed: {exc}", err=True)
            continue
        say(f"KB re-read ({'all goals' if whole else ', '.join(goals)})")
        for problem in problems:
            say(f"KB problem: {problem.path}: {problem.message}", err=True)


async def _start_ops(service: Any, scheduler: Any, args: argparse.Namespace) -> Any:
    from goalsui.ops.health import start_ops_server

    # ready while the loop's heartbeat (every poll interval, also when idle) is at most
    # two intervals old
    quiet = 2 * scheduler.heartbeat_interval
    ops = await start_ops_server(
        service, scheduler, args.metrics_host, args.metrics_port, max_quiet=quiet
    )
    base = f"http://{args.metrics_host}:{ops.port}"
    say(f"metrics on {base}/metrics, health on {base}/healthz and {base}/readyz")
    return ops


async def _quietly(close: Callable[[], Awaitable[object]]) -> None:
    """Close one thing the daemon started beside the scheduler (a failure stops no other close)."""
    with contextlib.suppress(Exception):
        await close()


async def run_daemon(service: Any, args: argparse.Namespace) -> int:
    from goalsui.hooks.server import start_listener
    from goalsui.scheduler import Scheduler
    from goalsui.scheduler.heap import settle_heap
    from goalsui.scheduler.notices import Notifier

    stop = stop_on_signals()
    scheduler = Scheduler(
        service,
        poll_interval=args.poll_interval,
        lease_seconds=args.lease_seconds,
        grace_seconds=args.grace_seconds,
        max_concurrency=args.max_concurrency,
    )
    fatal: list[str] = []

    def on_fatal(message: str) -> None:  # runs on the loop: the scheduler emits there
        if not fatal:
            fatal.append(message)
            say(f"scheduler stopped: {message}", err=True)
        stop.set()

    scheduler.subscribe(_run_log(on_fatal))
    Notifier(service).attach(scheduler)  # the notify: command of goalsui.yaml, if set
    await scheduler.start()
    settle_heap()  # a long-running process: see goalsui.scheduler.heap
    # consoles on this KB see it and watch instead of starting a second scheduler
    registration = service.schedulers.register("daemon", scheduler.owner)
    async with contextlib.AsyncExitStack() as stack:  # closed in reverse order
        stack.callback(registration.close)
        stack.push_async_callback(scheduler.stop)
        if args.metrics_port is not None:
            stack.push_async_callback(_quietly, (await _start_ops(service, scheduler, args)).close)
        if args.hooks_port is not None:
            hooks = start_listener(service, args.hooks_host, args.hooks_port)
            stack.push_async_callback(_quietly, (await hooks).close)
            say(
                f"listening for event hooks on http://{args.hooks_host}:{args.hooks_port}/hooks/<source>"
            )
        if not args.no_watch:
            watcher = asyncio.get_running_loop().create_task(_watch_kb(service))
            stack.push_async_callback(asyncio.wait, [watcher])
            stack.callback(watcher.cancel)
        stack.callback(stop.set)
        say(
            f"goalsui daemon: scheduler {scheduler.owner} {scheduler.status_text}; KB {service.kb.root}; "
            f"database {service.db_url_display()}; stop with Ctrl-C or SIGTERM"
        )
        await stop.wait()
        running = len(scheduler.running)
        grace = f": {running} running run(s) get {args.grace_seconds:g}s" if running else ""
        say(f"stopping{grace}")
    say("stopped")
    if fatal:
        raise FatalError(fatal[0])  # one line on stderr, exit 1
    return 0


def cmd_daemon(args: argparse.Namespace) -> int:
    global say
    _check(args)
    from goalsui.ops.logging import configure

    say = configure(args.log_format)
    with contextlib.closing(open_service(args, actor="scheduler")) as service:
        return asyncio.run(run_daemon(service, args))
