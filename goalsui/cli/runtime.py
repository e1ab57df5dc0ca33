"""Long-running commands: the console and the demo."""

from __future__ import annotations

import argparse
import gc
import sys
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    command,
    db_settings,
    kb_path,
    local,
    open_service,
    table,
)
from goalsui.domain.records import saved_id
from goalsui.domain.timeutil import utcnow
from goalsui.errors import NotFound

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from goalsui.service import Service


PRINT_HELP = "print the dashboard summary and exit (the scratch copy stays, at the path printed)"
FORCE = "run a scheduler even when a goalsui daemon already serves this KB"

DEMO_HELP = "copy the sample KB to a scratch place and open the console"


def register(sub: Subparsers) -> None:
    console = command(
        sub, "console", open_console, "open the console (the default command)", json=False
    )
    hooks = "listen for signed event hooks"
    console.add_argument("--hooks-port", type=int, metavar="N", help=hooks)
    console.add_argument("--hooks-host", default="127.0.0.1")
    demo = command(sub, "demo", cmd_demo, DEMO_HELP, json=False)
    demo.add_argument("--print", dest="print_only", action="store_true", help=PRINT_HELP)
    add_flags(demo, keep="keep the scratch copy (KB, database, run logs) when the demo ends")
    demo.set_defaults(hooks_port=None, hooks_host="127.0.0.1")
    for parser in (console, demo):
        scheduler = parser.add_mutually_exclusive_group()
        add_flags(scheduler, no_scheduler="only watch; run no intents")
        scheduler.add_argument(
            "--scheduler", dest="force_scheduler", action="store_true", help=FORCE
        )
        add_flags(parser, read_only="bind no action that changes state")
        parser.add_argument("--theme", help="theme name (see themes/)")


def print_dashboard(service: Service) -> None:
    """The plain-text dashboard summary."""
    summary = service.overview.summary()
    print(f"KB {service.kb.root}")
    print(
        f"{summary['goals']} goals ({summary['goal_errors']} with errors) · "
        f"{summary['running']} running · {summary['due']} due · {summary['failed_24h']} failed in 24h"
    )
    rows = [
        [goal.name[:28], w.name, w.schedule, w.timezone, w.status, local(w.next_run_at)]
        for goal in service.goals.list()
        for w in goal.workers
    ]
    if rows:
        print(table(rows, ["goal", "worker", "schedule", "tz", "status", "next run"]))
    for thread in service.threads.list():
        todos = service.todos.list(saved_id(thread))
        still = sum(not t.done for t in todos)
        print(f"\nthread {thread.id} {thread.title}: {still} open of {len(todos)}")
        for t in todos:
            print(f"  [{'x' if t.done else ' '}] {t.text}")


def open_console(args: argparse.Namespace) -> int:
    # The console paints its first frame from the records of a SQLite database read with
    # the standard library, or else from a quick read of the KB folders (started here, so
    # it overlaps importing Textual); then it opens the service (importing the database
    # stack costs more than Textual) in a worker and shows its read; sync_kb re-reads the
    # KB behind it (seconds on thousands of workers) and the scheduler starts after that.
    root = Path(kb_path(args)).expanduser().resolve()
    if not root.is_dir():  # the same check and words as Service.open, before any paint
        raise NotFound(
            f"no KB at {root} (create one with 'goalsui init PATH', or pass --kb / set GOALSUI_KB)"
        )
    gc.disable()  # while importing too: run_console turns collection on at the first frame
    from goalsui.service.quick import sqlite_file
    from goalsui.tui.preview import read_in_background

    preview = read_in_background(root, utcnow(), sqlite_file(root, *db_settings(args)))
    from goalsui.tui.app import run_console
    from goalsui.tui.reader import reader_for

    args.console_sync = True
    # With no scheduler (nor hooks listener) of its own, the console reads its records
    # without the database stack until the operator acts, if its index is current.
    reading = args.no_scheduler and not args.hooks_port
    return run_console(
        args,
        lambda: open_service(args, actor="operator", sync=False),
        root,
        preview,
        reader_for(root, *db_settings(args)) if reading else None,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    """The console on a scratch copy of the sample KB, removed when it ends (``--keep``)."""
    import shutil

    from goalsui.demo import make_demo_kb
    from goalsui.demo_extras import add_demo_extras

    kb = make_demo_kb()
    add_demo_extras(kb)  # a worker long enough to stop; the stand-in agent answers threads
    scratch = kb.parent
    args.kb = str(kb)
    if not args.state_dir:
        args.state_dir = str(scratch / "state")
    keep = args.keep or args.print_only  # --print names the path
    note = "" if keep else " (removed when the demo ends; --keep keeps it)"
    print(f"demo: scratch KB {kb}{note}", file=sys.stderr, flush=True)
    try:
        return _run_demo(args, kb)
    finally:
        if keep:
            print(f"demo: the scratch copy stays in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _run_demo(args: argparse.Namespace, kb: Path) -> int:
    if not args.print_only:
        from goalsui.tui.app import run_console

        return run_console(args, lambda: _open_demo(args), kb.resolve())
    with closing(_open_demo(args)) as service:
        print_dashboard(service)
    return 0


def _open_demo(args: argparse.Namespace) -> Any:
    """The demo's service: last night of the sample nightshift and of a nightshift on a scratch
    git repository replayed, the KB indexed, demo records loaded."""
    from goalsui.demo import load_demo_records, replay_last_night, replay_repo_night

    def open_at(clock: Callable[[], datetime]) -> Service:
        return open_service(args, actor="scheduler", sync=False, clock=clock)

    notes = []
    replays: list[tuple[str, Callable[[], object]]] = [
        ("last night was", lambda: replay_last_night(open_at, utcnow())),
        (
            "the repository night was",
            lambda: replay_repo_night(open_at, utcnow(), Path(args.kb).parent),
        ),
    ]
    for what, replay in replays:
        try:
            replay()
        except Exception as exc:  # noqa: BLE001 - the demo opens without it; the journal says why
            notes.append(f"demo: {what} not replayed: {type(exc).__name__}: {exc}")
    service = open_service(args, actor="operator")
    for text in notes:
        service.journal.record("demo: last night not replayed", detail=text[:500])
    load_demo_records(service)
    return service
