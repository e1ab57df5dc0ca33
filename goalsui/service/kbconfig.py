"""``goalsui config set runner ...``: ``goalsui.yaml`` edited in place (comments and key
order kept), validated first, replaced atomically; a broken file is never rewritten."""

from __future__ import annotations

import shlex
from typing import Any

from goalsui.domain.agents import AGENTS
from goalsui.errors import ValidationError
from goalsui.kb.atomic import atomic_write
from goalsui.kb.config import parse_kb_config
from goalsui.kb.paths import CONFIG_FILE
from goalsui.kb.yamlio import load_yaml_mapping, parse_yaml, roundtrip_update
from goalsui.service.context import ServiceContext

BUILTINS = ("report",)


def runner_from_words(
    preset: str | None, command: str | None, model: str | None = None
) -> dict[str, Any]:
    """The ``runner:`` mapping for a preset, a builtin or a shell-like argv string."""
    if (preset is None) == (command is None):
        raise ValidationError("give a runner preset (e.g. claude) or --command ARGV, not both")
    runner: dict[str, Any]
    if command is not None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ValidationError(f"invalid --command: {exc}") from None
        if not argv:
            raise ValidationError("--command is empty")
        runner = {"command": argv}
    elif preset in BUILTINS:
        runner = {"builtin": preset}
    elif preset in AGENTS:
        runner = {"agent": preset}
    else:
        known = ", ".join((*AGENTS, *BUILTINS))
        raise ValidationError(
            f"unknown runner preset {preset!r} (known: {known}; or --command ARGV)"
        )
    if model:
        if "builtin" in runner:
            raise ValidationError("a builtin runner takes no --model")
        runner["model"] = model
    return runner


def set_default_runner(ctx: ServiceContext, runner: dict[str, Any]) -> dict[str, Any]:
    """Write the KB's default ``runner:``; returns it as the KB now reads it."""
    path = ctx.kb.root / CONFIG_FILE
    ctx.kb.check_inside(path, CONFIG_FILE)
    text = ""
    if path.exists():
        data, text = load_yaml_mapping(path, CONFIG_FILE)
        parse_kb_config(data, text, CONFIG_FILE)  # a broken file is never rewritten
    new_text = roundtrip_update(text, {"runner": runner}, display=CONFIG_FILE)
    config = parse_kb_config(parse_yaml(new_text, CONFIG_FILE) or {}, new_text, CONFIG_FILE)
    if new_text != text:
        atomic_write(path, new_text)
        ctx.journal.record("config set", "runner", shlex.join(_words(runner)))
        ctx.config(reload=True)  # this process sees it at once (others through the watch)
    assert config.runner is not None  # just written
    return config.runner.as_dict()


def _words(runner: dict[str, Any]) -> list[str]:
    if "command" in runner:
        return ["--command", *map(str, runner["command"])]
    return [str(runner.get("agent") or runner.get("builtin"))]
