"""The goalsui command line: a thin layer over :mod:`goalsui.service`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from goalsui import __version__
from goalsui.cli.common import ArgumentParser
from goalsui.errors import GoalsuiError

#: Modules that each add their subcommands with ``register(subparsers)``.
COMMAND_MODULES = (
    "goalsui.cli.goals",
    "goalsui.cli.intents",
    "goalsui.cli.threads",
    "goalsui.cli.misc",
    "goalsui.cli.runtime",
    "goalsui.cli.daemon",
    "goalsui.cli.plan",
    "goalsui.cli.report",
    "goalsui.cli.events",
    "goalsui.cli.bench",
    "goalsui.cli.db",
    "goalsui.cli.serve",
)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="goalsui",
        description="Operator console and embedded scheduler for long-lived agent work.",
    )
    parser.add_argument("--version", action="version", version=f"goalsui {__version__}")
    parser.add_argument("--kb", metavar="PATH", help="the KB folder (default $GOALSUI_KB, else ./kb)")
    parser.add_argument("--db", metavar="URL", help="database URL (default: SQLite in the state dir)")
    parser.add_argument("--state-dir", metavar="PATH", help="where goalsui keeps its database and run logs")
    parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


GLOBAL_WITH_VALUE = ("--kb", "--db", "--state-dir")


def _default_to_console(parser: ArgumentParser, argv: list[str]) -> list[str]:
    """``goalsui [global options] [console options]`` means ``goalsui ... console ...``."""
    commands: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands.update(action.choices)
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in commands or token in ("-h", "--help", "--version"):
            return argv
        if token in GLOBAL_WITH_VALUE:
            i += 2
            continue
        if token.split("=", 1)[0] in GLOBAL_WITH_VALUE or token == "--debug":
            i += 1
            continue
        return [*argv[:i], "console", *argv[i:]]
    return [*argv, "console"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``goalsui`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(_default_to_console(parser, list(argv if argv is not None else sys.argv[1:])))
    func = args.func
    try:
        result = func(args)
    except GoalsuiError as exc:
        sys.stderr.write(f"goalsui: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("goalsui: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - never a traceback for the operator
        if args.debug or os.environ.get("GOALSUI_DEBUG"):
            raise
        sys.stderr.write(
            f"goalsui: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
            "(rerun with GOALSUI_DEBUG=1 for details)\n"
        )
        return 2
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
