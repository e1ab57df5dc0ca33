"""``goalsui bench scheduler|console``: measurements beside a reference from the same run."""

from __future__ import annotations

import argparse
import importlib

from goalsui.cli.common import add_json
from goalsui.errors import GoalsuiError, ValidationError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser(
        "bench", help="measure the scheduler, the console or the tool server beside a reference"
    )
    bsub = bench.add_subparsers(dest="bench_command", metavar="WHAT", required=True)
    _register_scheduler(bsub)
    _register_console(bsub)
    _register_mcp(bsub)
    _register_chaos(bsub)


def _register_scheduler(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bench scheduler``."""
    sched = bsub.add_parser(
        "scheduler",
        help="fires per second, fire lateness and idle CPU of the scheduler (no-op turns)",
        description=(
            "N no-op intents due at once on the database: fires per second (claim, run record, "
            "completion) beside a raw sqlite3 compare-and-set loop, fire lateness beside "
            "APScheduler 3's in-memory AsyncIOScheduler with N date jobs, and idle CPU with N "
            "future intents. Turns are an in-process no-op, so this measures the scheduler, "
            "not a runner. Without --db it uses a scratch SQLite file; a --db must be an empty "
            "scratch database."
        ),
    )
    sched.add_argument(
        "--intents", type=int, default=1000, metavar="N", help="number of intents (default 1000)"
    )
    sched.add_argument(
        "--db",
        dest="bench_db",
        metavar="URL",
        help="an empty scratch database (default: a temporary SQLite file)",
    )
    sched.add_argument(
        "--idle-seconds", type=float, default=60.0, metavar="S", help="idle CPU window (default 60)"
    )
    sched.add_argument(
        "--spread-seconds",
        type=float,
        metavar="S",
        help="window of the spread lateness run (default: N/1000 s, at least 2)",
    )
    sched.add_argument(
        "--repeat",
        type=int,
        metavar="K",
        help="runs of the burst and the spread (each beside its references); medians are reported (default 3; "
        "not with --daemons)",
    )
    sched.add_argument(
        "--daemons",
        type=int,
        metavar="K",
        help="K scheduler processes (1-8) share the burst: fires per second, lateness and an "
        "exactly-once check (no references, no idle or spread runs)",
    )
    add_json(sched)
    sched.set_defaults(func=cmd_scheduler)


def _register_console(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bench console``."""
    console = bsub.add_parser(
        "console",
        help="measure the console (start-up, memory, idle CPU, refresh) beside a reference",
    )
    console.add_argument("--goals", type=int, metavar="N", help="goals in the generated KB")
    console.add_argument("--workers", type=int, metavar="N", help="workers per goal")
    console.add_argument("--repeat", type=int, metavar="N", help="repetitions of each measurement")
    console.add_argument("--samples", type=int, metavar="N", help="samples per repetition")
    console.add_argument(
        "--idle-seconds",
        type=float,
        metavar="S",
        help="idle CPU window for the console and the bare app (default 60; 0 skips it)",
    )
    add_json(console)
    console.set_defaults(func=cmd_console)


def _register_mcp(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bench mcp``."""
    mcp = bsub.add_parser(
        "mcp",
        help="time from starting goalsui mcp to its tools list (sample KB), beside references",
    )
    mcp.add_argument("--repeat", type=int, default=5, metavar="N", help="runs (default 5)")
    mcp.add_argument(
        "--turns",
        metavar="PRESETS",
        nargs="?",
        const="claude,codex",
        help="also time a real turn (claim to end) with each preset (default claude,codex) "
        "beside a trivial command; the CLIs use the model their environment names",
    )
    add_json(mcp)
    mcp.set_defaults(func=cmd_mcp)


def _register_chaos(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bench chaos``."""
    chaos = bsub.add_parser(
        "chaos",
        help="K goalsui daemons on one PostgreSQL database under random faults, then invariants",
        description=(
            "K real 'goalsui daemon' processes on one empty PostgreSQL database, intents of "
            "every kind firing (heartbeats, checklists, cron in DST zones, at, signed event "
            "hooks) with real subprocess turns, and a fault every N seconds: kill -9 of a "
            "daemon, SIGSTOP past its lease, a PostgreSQL restart (with --pg-dir), a dropped "
            "connection. Then it checks exactly-once and cleanup invariants against the "
            "database and the process table; exit 1 on any violation."
        ),
    )
    chaos.add_argument(
        "--db",
        dest="bench_db",
        metavar="URL",
        required=True,
        help="an empty scratch PostgreSQL database",
    )
    chaos.add_argument(
        "--pg-dir",
        metavar="DIR",
        help="the server's data directory (or one holding data/, as tests/pgserver.py makes): "
        "allows PostgreSQL restarts; without it that fault is skipped",
    )
    chaos.add_argument("--daemons", type=int, default=3, metavar="K", help="daemons (default 3)")
    chaos.add_argument(
        "--minutes", type=float, default=10.0, metavar="M", help="fault period (default 10)"
    )
    chaos.add_argument(
        "--fault-every", type=float, default=4.0, metavar="S", help="seconds between faults (4)"
    )
    chaos.add_argument(
        "--rate", type=float, default=10_000, metavar="N", help="fires an hour (default 10000)"
    )
    chaos.add_argument(
        "--lease-seconds", type=float, default=3.0, metavar="S", help="daemons' lease (default 3)"
    )
    chaos.add_argument(
        "--settle-seconds",
        type=float,
        default=45.0,
        metavar="S",
        help="after the faults, before the checks (default 45)",
    )
    chaos.add_argument("--seed", type=int, metavar="N", help="random seed (default: random)")
    add_json(chaos)
    chaos.set_defaults(func=cmd_chaos)


def cmd_chaos(args: argparse.Namespace) -> int:
    from goalsui.bench.chaos import main

    return main(args)


def cmd_scheduler(args: argparse.Namespace) -> int:
    if args.daemons is not None:
        if args.repeat is not None:
            raise ValidationError(
                "--repeat does not apply with --daemons (one burst, no references)"
            )
        from goalsui.bench.multi import main as multi_main

        return multi_main(args)
    from goalsui.bench.scheduler import main

    return main(args)


def cmd_console(args: argparse.Namespace) -> int:
    idle = getattr(args, "idle_seconds", None)
    if idle is not None and not 0 <= idle <= 3600:
        raise ValidationError("--idle-seconds must be between 0 and 3600")
    try:
        module = importlib.import_module("goalsui.bench.console")
    except ModuleNotFoundError as exc:
        if exc.name == "goalsui.bench.console":
            raise GoalsuiError(
                "'bench console' is not available in this build (goalsui.bench.console is missing)"
            ) from None
        raise
    if not hasattr(module, "main"):
        raise ValidationError("goalsui.bench.console has no main(args)")
    return int(module.main(args) or 0)


def cmd_mcp(args: argparse.Namespace) -> int:
    from goalsui.bench.mcp import main

    return main(args)
