"""``goalsui bench scheduler|console|mcp|chaos``: measurements beside a reference from the same run."""

from __future__ import annotations

import argparse
import importlib

from goalsui.cli.common import Subparsers, add_options, check_ranges, command, group
from goalsui.errors import GoalsuiError, ValidationError

SCHEDULER_HELP = "fires per second, fire lateness and idle CPU of the scheduler (no-op turns)"
SCHEDULER_ABOUT = (
    "N no-op intents due at once on the database: fires per second (claim, run record, "
    "completion) beside a raw sqlite3 compare-and-set loop, fire lateness beside "
    "APScheduler 3's in-memory AsyncIOScheduler with N date jobs, and idle CPU with N "
    "future intents. Turns are an in-process no-op, so this measures the scheduler, "
    "not a runner. Without --db it uses a scratch SQLite file; a --db must be an empty "
    "scratch database."
)
CHAOS_HELP = "K goalsui daemons on one PostgreSQL database under random faults, then invariants"
CHAOS_ABOUT = (
    "K real 'goalsui daemon' processes on one empty PostgreSQL database, intents of "
    "every kind firing (heartbeats, checklists, cron in DST zones, at, signed event "
    "hooks) with real subprocess turns, and a fault every N seconds: kill -9 of a "
    "daemon, SIGSTOP past its lease, a PostgreSQL restart (with --pg-dir), a dropped "
    "connection. Then it checks exactly-once and cleanup invariants against the "
    "database and the process table; exit 1 on any violation."
)
SCRATCH_DB_HELP = "an empty scratch database (default: a temporary SQLite file)"
SPREAD_HELP = "window of the spread lateness run (default: N/1000 s, at least 2)"
REPEAT_HELP = "runs of the burst and the spread (each beside its references); medians are reported (default 3; not with --daemons)"
DAEMONS_HELP = "K scheduler processes (1-8) share the burst: fires per second, lateness and an exactly-once check (no references, no idle or spread runs)"
TURNS_HELP = "also time a real turn (claim to end) with each preset (default claude,codex) beside a trivial command; the CLIs use the model their environment names"
PG_DIR_HELP = "the server's data directory (or one holding data/, as tests/pgserver.py makes): allows PostgreSQL restarts; without it that fault is skipped"
CONSOLE_HELP = "measure the console (start-up, memory, idle CPU, refresh) beside a reference"
MCP_HELP = "time from starting goalsui mcp to its tools list (sample KB), beside references"
PG_DB_HELP = "an empty scratch PostgreSQL database"
IDLE_HELP = "idle CPU window for the console and the bare app (default 60; 0 skips it)"


def register(sub: Subparsers) -> None:
    about = "measure the scheduler, the console or the tool server beside a reference"
    bsub = group(sub, "bench", about, "WHAT")
    sched = command(bsub, "scheduler", cmd_bench, SCHEDULER_HELP, description=SCHEDULER_ABOUT)
    sched.add_argument("--db", dest="bench_db", metavar="URL", help=SCRATCH_DB_HELP)
    add_options(
        sched,
        ("--intents", int, 1000, "N", "number of intents (default 1000)"),
        ("--idle-seconds", float, 60.0, "S", "idle CPU window (default 60)"),
        ("--spread-seconds", float, None, "S", SPREAD_HELP),
        ("--repeat", int, None, "K", REPEAT_HELP),
        ("--daemons", int, None, "K", DAEMONS_HELP),
    )
    console = command(bsub, "console", cmd_bench, CONSOLE_HELP)
    add_options(
        console,
        ("--goals", int, None, "N", "goals in the generated KB"),
        ("--workers", int, None, "N", "workers per goal"),
        ("--repeat", int, None, "N", "console and bare-app start-ups, interleaved (default 7)"),
        ("--samples", int, None, "N", "samples per repetition"),
        ("--idle-seconds", float, None, "S", IDLE_HELP),
    )
    mcp = command(bsub, "mcp", cmd_bench, MCP_HELP)
    mcp.add_argument("--repeat", type=int, default=5, metavar="N", help="runs (default 5)")
    mcp.add_argument("--turns", metavar="PRESETS", nargs="?", const="claude,codex", help=TURNS_HELP)
    chaos = command(bsub, "chaos", cmd_bench, CHAOS_HELP, description=CHAOS_ABOUT)
    chaos.add_argument("--db", dest="bench_db", metavar="URL", required=True, help=PG_DB_HELP)
    chaos.add_argument("--pg-dir", metavar="DIR", help=PG_DIR_HELP)
    add_options(
        chaos,
        ("--daemons", int, 3, "K", "daemons (default 3)"),
        ("--minutes", float, 10.0, "M", "fault period (default 10)"),
        ("--fault-every", float, 4.0, "S", "seconds between faults (4)"),
        ("--rate", float, 10_000, "N", "fires an hour (default 10000)"),
        ("--lease-seconds", float, 3.0, "S", "daemons' lease (default 3)"),
        ("--settle-seconds", float, 45.0, "S", "after the faults, before the checks (default 45)"),
        ("--seed", int, None, "N", "random seed (default: random)"),
    )


def cmd_bench(args: argparse.Namespace) -> int:
    """Check the options, then run ``goalsui.bench.<WHAT>.main(args)``."""
    what = args.bench_command
    if what == "scheduler" and args.daemons is not None:
        if args.repeat is not None:
            raise ValidationError(
                "--repeat does not apply with --daemons (one burst, no references)"
            )
        check_ranges(("--daemons", args.daemons, 1, 8), ("--intents", args.intents, 1, 200_000))
        what = "multi"
    elif what == "scheduler":
        check_ranges(
            ("--intents", args.intents, 1, 200_000),
            ("--idle-seconds", args.idle_seconds, 0.1, 3600),
            ("--spread-seconds", args.spread_seconds, 0.1, 3600),
            ("--repeat", args.repeat, 1, 20),
        )
    elif what == "console":
        check_ranges(("--idle-seconds", args.idle_seconds, 0, 3600))
    elif what == "mcp":
        check_ranges(("--repeat", args.repeat, 1, 100))
    elif what == "chaos":
        check_ranges(
            ("--daemons", args.daemons, 1, 8),
            ("--minutes", args.minutes, 0.1, 24 * 60),
            ("--fault-every", args.fault_every, 0.5, 3600),
            ("--rate", args.rate, 100, 1_000_000),
            ("--lease-seconds", args.lease_seconds, 1, 600),
            ("--settle-seconds", args.settle_seconds, 5, 3600),
        )
    name = f"goalsui.bench.{what}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise GoalsuiError(
                f"'bench {args.bench_command}' is not available in this build ({name} is missing)"
            ) from None
        raise
    return int(module.main(args) or 0)
