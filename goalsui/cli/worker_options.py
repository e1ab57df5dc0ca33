"""Worker options of ``goal create`` and ``worker add``: those after ``--worker NAME`` are its; a
``--tz`` before any is every worker's default."""

from __future__ import annotations

import argparse
from typing import Any

from goalsui.cli.common import read_text_arg, split_argv
from goalsui.errors import ValidationError

#: ``--worker`` of ``goal create``
WORKER_HELP = "start a worker (repeatable); the options after it are its own (NAME=CRON: a worker with that cron schedule)"


class _WorkerOption(argparse.Action):
    """``--worker NAME`` opens a worker (``NAME=CRON``: a whole one); the other options are the
    last opened worker's, a ``--tz`` before any is every worker's default."""

    def __call__(self, parser: Any, namespace: Any, value: Any, option: Any = None) -> None:
        if namespace.worker_specs is None:
            namespace.worker_specs = []
        specs: list[dict[str, Any]] = namespace.worker_specs
        if self.dest == "worker":
            name, sep, cron = str(value).partition("=")
            if sep and (not name.strip() or not cron.strip()):
                raise argparse.ArgumentError(
                    self, f"invalid {value!r}: use NAME or NAME=CRON, e.g. scout='30 20 * * *'"
                )
            whole = {"cron": cron.strip(), "_closed": True} if sep else {}
            specs.append({"name": name.strip(), **whole})
            return
        if not namespace._worker_repeat:
            if not specs:
                specs.append({})
        elif not specs or specs[-1].get("_closed"):
            if self.dest == "tz":
                namespace.default_tz = value
                return
            raise argparse.ArgumentError(self, "must follow --worker NAME")
        if self.dest in specs[-1]:
            raise argparse.ArgumentError(self, "given twice for one worker")
        specs[-1][self.dest] = value


def add_worker_options(parser: argparse.ArgumentParser, *, repeat: bool) -> None:
    """Add the worker options; ``repeat``: several workers, each opened by ``--worker``."""
    parser.set_defaults(worker_specs=None, default_tz="UTC", _worker_repeat=repeat)
    if repeat:
        parser.add_argument("--worker", action=_WorkerOption, metavar="NAME", help=WORKER_HELP)
    group = parser.add_argument_group(
        "worker options" + (" (after --worker NAME)" if repeat else "")
    )
    for flag, meta, text in (
        ("--cron", "EXPR", "cron schedule, e.g. '30 20 * * *'"),
        ("--every", "DUR", "interval (a heartbeat), e.g. 30m"),
        ("--at", "ISO", "one instant"),
        ("--tz", "ZONE", "IANA timezone of the schedule (default UTC)"),
        ("--instructions", "TEXT", "what the worker does each tick: text, @FILE or -"),
        ("--runner", "PRESET", "an agent preset (e.g. claude) or a builtin (report)"),
        ("--command", "ARGV", "the command to run, e.g. 'llm -m gpt-4o' (split like a shell)"),
        ("--capabilities", "LIST", "comma-separated tool capabilities"),
        ("--timeout", "DUR", "longest run (default 10m)"),
    ):
        group.add_argument(flag, action=_WorkerOption, metavar=meta, help=text)


def worker_seeds(args: argparse.Namespace) -> list[Any]:
    """The parsed options as checked worker seeds (nothing written yet)."""
    from goalsui.service.authoring import worker_seed

    out = []
    specs = args.worker_specs or ([] if args._worker_repeat else [{}])
    for spec in specs:
        name = spec.get("name") or getattr(args, "worker", None)
        if not name:
            raise ValidationError("a worker needs a name")
        command = spec.get("command")
        if command is not None:
            command = split_argv(command, f"--command of worker '{name}'")
        text = spec.get("instructions")
        out.append(
            worker_seed(
                name,
                **{key: spec.get(key) for key in ("cron", "every", "at", "runner")},
                tz=spec.get("tz") or args.default_tz,
                instructions=read_text_arg(text) if text else "",
                command=command,
                capabilities=[
                    c.strip() for c in (spec.get("capabilities") or "").split(",") if c.strip()
                ],
                timeout=spec.get("timeout") or "10m",
            )
        )
    return out
