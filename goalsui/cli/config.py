"""``goalsui config set runner PRESET | --command ARGV``: the KB's default runner."""

from __future__ import annotations

import argparse

from goalsui.cli.common import add_json, open_service, print_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = sub.add_parser("config", help="KB-level settings in goalsui.yaml")
    csub = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    setp = csub.add_parser("set", help="set a KB-level setting")
    ssub = setp.add_subparsers(dest="setting", metavar="SETTING", required=True)
    runner = ssub.add_parser(
        "runner",
        help="the default runner of turns that name none (comments in goalsui.yaml are kept)",
    )
    runner.add_argument(
        "preset", nargs="?", help="an agent preset (claude, codex, goose) or a builtin (report)"
    )
    runner.add_argument(
        "--command", metavar="ARGV", help="a command instead, split like a shell: 'llm -m gpt-4o'"
    )
    runner.add_argument("--model", help="a model name for the agent ({model} in a command)")
    add_json(runner)
    runner.set_defaults(func=cmd_set_runner)


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
