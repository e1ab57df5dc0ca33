"""Shared command-line plumbing: global options, opening the service, printing. Everything the
command line prints for people goes through one sanitiser: :func:`guard_streams` passes every write
to ``sys.stdout``/``sys.stderr`` through :func:`goalsui.domain.untrusted.plain`, so agent output,
messages, KB fields and errors never send escape sequences, OSC or C1 controls or bidi overrides to
the terminal; :func:`print_json` escapes the same characters as ``\\uXXXX``."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeAlias

from goalsui.cli.inputs import read_input_text
from goalsui.domain.untrusted import json_escape, plain
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    import asyncio

    from goalsui.service import Service


class ArgumentParser(argparse.ArgumentParser):
    """argparse with goalsui's error contract: one line on stderr, exit code 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"goalsui: error: {message} (see '{self.prog} --help')\n")


def kb_path(args: argparse.Namespace) -> Path:
    return Path(args.kb or os.environ.get("GOALSUI_KB") or "kb")


def db_settings(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The ``--db`` and ``--state-dir`` given (or their env vars); None: the default."""
    db = args.db or os.environ.get("GOALSUI_DB")
    return db, args.state_dir or os.environ.get("GOALSUI_STATE_DIR")


def open_service(
    args: argparse.Namespace,
    *,
    actor: str = "cli",
    sync: bool = True,
    clock: Callable[[], datetime] | None = None,
) -> Service:
    """The service the command works on; a goal prefix or slug in ``goal_id``/``goal`` is expanded
    to its id (else "did you mean")."""
    from goalsui.service import Service

    db, state = db_settings(args)
    extra = {"clock": clock} if clock is not None else {}
    service = Service.open(kb_path(args), db, state, actor=actor, sync=sync, **extra)
    for name in ("goal_id", "goal"):
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            setattr(args, name, service.goals.resolve(value))
    return service


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler = Callable[[argparse.Namespace], int]


def group(sub: Subparsers, name: str, help: str, metavar: str = "ACTION") -> Subparsers:
    """``goalsui NAME ACTION ...``: a command whose actions are subcommands."""
    parser = sub.add_parser(name, help=help)
    return parser.add_subparsers(dest=f"{name}_command", metavar=metavar, required=True)


def command(
    sub: Subparsers,
    name: str,
    func: Handler,
    help: str,
    *positionals: str,
    json: bool = True,
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A subcommand running ``func``, with ``positionals`` and (unless ``json=False``) ``--json``;
    ``kwargs`` go to ``add_parser`` (e.g. ``description``)."""
    parser = sub.add_parser(name, help=help, **kwargs)
    for positional in positionals:
        parser.add_argument(positional)
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=func)
    return parser


def add_options(
    parser: argparse._ActionsContainer, *rows: tuple[str, Callable[[str], Any], Any, str, str]
) -> None:
    """Each ``(flag, type, default, metavar, help)``: an option that takes a value."""
    for flag, kind, default, metavar, text in rows:
        parser.add_argument(flag, type=kind, default=default, metavar=metavar, help=text)


def add_flags(parser: Any, **flags: str) -> None:
    """On/off options, each ``name="help"``: ``no_watch=...`` adds ``--no-watch``."""
    for name, text in flags.items():
        parser.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=text)


def check_ranges(*checks: tuple[str, float | None, float, float]) -> None:
    """Each ``(option, value, low, high)``: a value given must be within ``low..high``."""
    for name, value, low, high in checks:
        if value is not None and not low <= value <= high:
            raise ValidationError(f"{name} must be between {low:g} and {high:g}")


def print_json(data: Any) -> None:
    def default(value: Any) -> str:  # datetimes to the second; paths and the rest as text
        return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value)

    text = json.dumps(data, indent=2, default=default, ensure_ascii=False)
    sys.stdout.write(json_escape(text) + "\n")


class SafeStream(io.TextIOBase):
    """A text stream that writes ``plain(text)`` to the stream it wraps."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(plain(text) if text else text)
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares an attribute
        return getattr(self.raw, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


@contextmanager
def guard_streams() -> Iterator[None]:
    """Sanitise ``sys.stdout`` and ``sys.stderr`` for the duration (nested use is fine)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):  # a closed pipe: nothing more to say
                stream.flush()
        sys.stdout, sys.stderr = saved


def answer(args: argparse.Namespace, data: Any, text: str) -> int:
    """Print ``data`` as JSON with ``--json``, else ``text``; the exit code 0."""
    if args.json:
        print_json(data)
    else:
        print(text)
    return 0


def local(dt: datetime | None) -> str:
    """An instant for people: local time of this machine, minutes precision, with offset."""
    if dt is None:
        return "-"
    return dt.astimezone().strftime("%Y-%m-%d %H:%M %z")


def table(rows: list[list[Any]], headers: list[str], empty: str = "") -> str:
    """A plain aligned text table; ``empty`` when there are no rows."""
    if not rows and empty:
        return empty
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    return "\n".join(lines)


def parse_id(value: str, what: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(f"invalid {what} id {value!r}: expected a number") from None
    if number < 1 or number > 2**62:
        raise ValidationError(f"invalid {what} id {value!r}")
    return number


MAX_COUNT = 2**31 - 1


def positive_count(value: str) -> int:
    """An argparse type: a whole number from 1 to 2**31-1 (a database column holds it)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value[:40]!r}") from None
    if not 1 <= number <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_COUNT}, not {value[:40]}")
    return number


def split_argv(text: str, option: str) -> list[str]:
    """A command line given as one option, split like a shell (never empty)."""
    import shlex

    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValidationError(f"invalid {option}: {exc}") from None
    if not argv:
        raise ValidationError(f"{option} is empty")
    return argv


def stop_on_signals() -> asyncio.Event:
    """An event that SIGTERM and SIGINT set (on the running loop)."""
    import asyncio
    import signal

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    return stop


def read_text_arg(value: str) -> str:
    """``@FILE`` or ``-`` (stdin) read with a size bound, else the text itself."""
    if value == "-" or value.startswith("@"):
        return read_input_text(value.removeprefix("@"))
    return value


def print_capability_warnings(service: Service, goal_id: str, worker: str | None = None) -> None:
    """Warn on stderr of each capability of the goal's workers that grants nothing."""
    from goalsui.service.runner_checks import worker_warnings

    shown = f"/workers/{worker}/" if worker else None
    for w in worker_warnings(service, [goal_id], capabilities=True):
        if shown is None or shown in w.path:
            sys.stderr.write(f"warning: {w.path}: {w.message}\n")
