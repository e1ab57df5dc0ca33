"""The goalsui command line: a thin layer over :mod:`goalsui.service`."""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Sequence

from goalsui import __version__
from goalsui.cli.common import ArgumentParser, add_options, guard_streams
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError

#: Modules that each add their subcommands with ``register(subparsers)``, and the
#: commands each adds: a command line builds only its own command's parser (``goalsui``
#: and ``goalsui demo`` start faster); help, version and errors build them all.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "goalsui.cli.goals": ("goal",),
    "goalsui.cli.workers": ("worker",),
    "goalsui.cli.intents": ("intent", "runs"),
    "goalsui.cli.threads": ("thread", "todo"),
    "goalsui.cli.misc": ("init", "doctor", "schedule", "config", "db"),
    "goalsui.cli.runtime": ("console", "demo"),
    "goalsui.cli.daemon": ("daemon",),
    "goalsui.cli.plan": ("plan",),
    "goalsui.cli.report": ("report",),
    "goalsui.cli.events": ("event", "events"),
    "goalsui.cli.bench": ("bench",),
    "goalsui.cli.serve": ("serve",),
    "goalsui.cli.nightshift": ("nightshift",),
    "goalsui.cli.kb": ("kb", "mcp"),
}
COMMANDS = {command: module for module, names in COMMAND_MODULES.items() for command in names}


def build_parser(command: str | None = None) -> ArgumentParser:
    """The parser: every command's, or with ``command`` only that command's module's."""
    parser = ArgumentParser(
        prog="goalsui",
        description="Operator console and embedded scheduler for long-lived agent work.",
    )
    parser.add_argument("--version", action="version", version=f"goalsui {__version__}")
    add_options(
        parser,
        ("--kb", str, None, "PATH", "the KB folder (default $GOALSUI_KB, else ./kb)"),
        ("--db", str, None, "URL", "database URL (default: SQLite in the state dir)"),
        ("--state-dir", str, None, "PATH", "where goalsui keeps its database and run logs"),
    )
    parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    modules = [COMMANDS[command]] if command in COMMANDS else list(COMMAND_MODULES)
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


GLOBAL_WITH_VALUE = ("--kb", "--db", "--state-dir")


class UnknownCommand(Exception):
    """A word where a command belongs that names none."""

    def message(self) -> str:
        word = str(self.args[0])
        close = difflib.get_close_matches(word, list(COMMANDS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"goalsui: error: unknown command {word[:60]!r}{hint} (see 'goalsui --help')\n"


def _default_to_console(argv: list[str]) -> tuple[list[str], str | None]:
    """``goalsui [global options] [console options]`` means ``goalsui ... console ...``."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in COMMANDS:
            return argv, token
        if token in ("-h", "--help", "--version"):
            return argv, None
        if token in GLOBAL_WITH_VALUE:
            if i + 1 == len(argv):
                return argv, None  # its value is missing: argparse says so
            i += 2
            continue
        if token.split("=", 1)[0] in GLOBAL_WITH_VALUE or token == "--debug":
            i += 1
            continue
        if not token.startswith("-"):  # the console takes options only: a mistyped command
            raise UnknownCommand(token)
        return [*argv[:i], "console", *argv[i:]], "console"
    return [*argv, "console"], "console"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``goalsui`` script; returns the exit code."""
    try:
        argv, command = _default_to_console(list(argv if argv is not None else sys.argv[1:]))
    except UnknownCommand as exc:
        sys.stderr.write(exc.message())
        return 1  # a user error (the command-line contract)
    if command in RAW_OUTPUT:  # they own the terminal (Textual, textual-serve)
        return _run(build_parser(command).parse_args(argv))
    with guard_streams():  # argparse's messages echo the operator's input: sanitised too
        return _run(build_parser(command).parse_args(argv))


#: Commands whose output is a terminal UI or a protocol stream (the tool server's JSON-RPC
#: on stdout), not text for people: everything else is sanitised.
RAW_OUTPUT = frozenset({"console", "demo", "serve", "mcp"})


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; every failure becomes a one-line message and an exit code."""
    try:
        result = args.func(args)
    except GoalsuiError as exc:
        sys.stderr.write(f"goalsui: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("goalsui: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback for the operator
        if args.debug or os.environ.get("GOALSUI_DEBUG"):
            raise
        message = user_message(exc)
        if message is not None:
            sys.stderr.write(f"goalsui: error: {message}\n")
            return 1
        sys.stderr.write(
            f"goalsui: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
            "(rerun with GOALSUI_DEBUG=1 for details)\n"
        )
        return 2
    return int(result or 0)


def user_message(exc: BaseException) -> str | None:
    """The one line for a failure outside goalsui's code that is the operator's to fix (bad input,
    a hostile environment: exit 1, never an internal error), else None."""
    kind = type(exc)
    if kind.__module__.startswith("sqlalchemy") and kind.__name__ == "OperationalError":
        orig = getattr(exc, "orig", None)
        detail = " ".join(str(orig if orig is not None else exc).split())
        if any(word in detail.lower() for word in ("readonly", "read-only", "read only")):
            return "the database is read-only: nothing was changed (check its file permissions)"
        return f"database: {plain(detail, limit=200)}"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply"
    if isinstance(exc, OverflowError):
        return f"a number or date is out of range ({plain(str(exc), limit=120)})"
    if isinstance(exc, OSError):
        where = f": {plain(str(exc.filename), limit=200)}" if exc.filename else ""
        return f"{exc.strerror or type(exc).__name__}{where}"
    return None


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
