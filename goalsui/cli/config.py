"""``goalsui config set runner PRESET | --command ARGV``: the KB's default runner."""

from __future__ import annotations

import argparse

from goalsui.cli.common import Subparsers, command, group, open_service, print_json


def register(sub: Subparsers) -> None:
    csub = group(sub, "config", "KB-level settings in goalsui.yaml")
    ssub = group(csub, "set", "set a KB-level setting", metavar="SETTING")
    runner = command(
        ssub,
        "runner",
        cmd_set_runner,
        "the default runner of turns that name none (comments in goalsui.yaml are kept)",
    )
    runner.add_argument(
        "preset", nargs="?", help="an agent preset (claude, codex, goose) or a builtin (report)"
    )
    runner.add_argument(
        "--command", metavar="ARGV", help="a command instead, split like a shell: 'llm -m gpt-4o'"
    )
    runner.add_argument("--model", help="a model name for the agent ({model} in a command)")


def cmd_set_runner(args: argparse.Namespace) -> int:
    from goalsui.service import kbconfig, runner_checks

    runner = kbconfig.runner_from_words(args.preset, args.command, args.model)
    service = open_service(args)
    written = kbconfig.set_default_runner(service, runner)
    if args.json:
        print_json({"runner": written})
        return 0
    print(f"default runner set in {service.kb.root / 'goalsui.yaml'}: {written}")
    for warning in runner_checks.runner_warnings(service):
        print(f"warning: {warning.path}: {warning.message}")
    return 0
