"""The KB's runners: the default one set by ``goalsui config set runner`` (``goalsui.yaml``
edited in place, comments and key order kept, validated first, replaced atomically; a
broken file is never rewritten), and runners that cannot start (none configured, a program
not on ``PATH``), warned about before a turn fails on them for a reason no retry fixes."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from goalsui.domain.agents import AGENTS
from goalsui.domain.capabilities import idle_capabilities
from goalsui.domain.views import Problem
from goalsui.errors import GoalsuiError, KBError, ValidationError
from goalsui.kb.atomic import atomic_write
from goalsui.kb.config import BUILTIN_RUNNERS, KBConfig, parse_kb_config
from goalsui.kb.layout import LoadedGoal
from goalsui.kb.nightshift import BINDING_FILE
from goalsui.kb.paths import CONFIG_FILE
from goalsui.kb.yamlio import load_yaml_mapping, parse_yaml, roundtrip_update
from goalsui.service.context import ServiceContext

NO_RUNNER_HINT = (
    "no runner configured (no runner: here and no default in goalsui.yaml): its turns "
    "would fail with reason config; set one with 'goalsui config set runner PRESET' or "
    "runner: in this file"
)


def runner_problem(runner: dict[str, Any] | None, cwd: Path) -> str | None:
    """Why turns with ``runner`` cannot start, or None."""
    if runner is None or not (
        runner.get("command") or runner.get("agent") or runner.get("builtin")
    ):
        return NO_RUNNER_HINT
    if runner.get("builtin"):
        return None
    program = str(runner.get("agent") or (runner.get("command") or [""])[0])
    if not program or program.startswith("{"):
        return None  # a placeholder such as {python}
    if "/" in program:
        missing = not (Path(program) if os.path.isabs(program) else cwd / program).is_file()
    else:
        missing = shutil.which(program) is None
    if missing:
        what = f"the {program} CLI" if runner.get("agent") else f"program '{program}'"
        return f"{what} is not found on PATH: its turns would fail with reason config"
    return None


def loaded_goals(ctx: ServiceContext, goal_ids: Iterable[str] | None) -> list[LoadedGoal]:
    """The KB's goals that load (``goal_ids`` None: all); broken ones are doctor's."""
    if goal_ids is None:
        return ctx.kb.scan()
    goals = []
    for goal_id in goal_ids:
        try:
            goals.append(ctx.kb.load_goal(goal_id))
        except GoalsuiError:
            continue
    return goals


def worker_warnings(
    ctx: ServiceContext, goal_ids: Iterable[str] | None = None, *, capabilities: bool = False
) -> list[Problem]:
    """Warnings, not problems: with ``capabilities``, capabilities that grant nothing; then
    each worker whose turns could not start (not judged under a broken goalsui.yaml)."""
    try:
        config: KBConfig | None = ctx.kb.config()
    except KBError:
        config = None  # doctor reports the broken goalsui.yaml as a problem
    default = config.runner.as_dict() if config is not None and config.runner else None
    idle: list[Problem] = []
    unstartable: list[Problem] = []
    for loaded in loaded_goals(ctx, goal_ids):
        nightshift_goal = (loaded.path / BINDING_FILE).exists()
        for name, wdef in sorted(loaded.workers.items()):
            runner = wdef.runner.as_dict() if wdef.runner else default
            shown = ctx.kb.display(loaded.path / "workers" / name / "definition.yaml")
            if capabilities:
                messages = idle_capabilities(
                    wdef.capabilities, runner, nightshift_goal=nightshift_goal
                )
                idle.extend(Problem(shown, None, m) for m in messages)
            problem = runner_problem(runner, loaded.path)
            if problem is not None and config is not None:
                unstartable.append(Problem(shown, None, problem))
    return idle + unstartable


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
    elif preset in BUILTIN_RUNNERS:
        runner = {"builtin": preset}
    elif preset in AGENTS:
        runner = {"agent": preset}
    else:
        known = ", ".join((*AGENTS, *BUILTIN_RUNNERS))
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
