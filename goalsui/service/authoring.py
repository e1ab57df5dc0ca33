"""A worker as ``worker add`` writes it (checked seeds) and as ``worker show`` prints it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from goalsui.domain.cron import validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.names import check_name
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.domain.views import WorkerView, json_fields
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.kb.config import BUILTIN_RUNNERS
from goalsui.kb.layout import WorkerSeed


def _schedule(
    name: str, cron: str | None, every: str | None, at: str | None, tz: str
) -> dict[str, str]:
    given = {k: v for k, v in (("cron", cron), ("every", every), ("at", at)) if v is not None}
    if len(given) != 1:
        raise ValidationError(f"worker '{name}' needs exactly one of --cron, --every or --at")
    load_zone(tz)
    form, value = next(iter(given.items()))
    value = value.strip()
    try:
        if form == "cron":
            value = validate_cron(value)
        elif form == "every":
            if parse_duration(value).total_seconds() < 10:
                raise ValidationError("'every' must be at least 10s")
        else:
            parse_instant(value, tz)
    except GoalsuiError as exc:
        raise ValidationError(f"invalid schedule of worker '{name}': {exc}") from None
    return {form: value, "timezone": tz}


def _runner(name: str, preset: str | None, command: list[str] | None) -> dict[str, Any] | None:
    if preset and command:
        raise ValidationError(f"worker '{name}' takes --runner or --command, not both")
    if command:
        if any("\x00" in arg for arg in command):
            raise ValidationError(f"--command of worker '{name}' contains a NUL byte")
        return {"command": list(command)}
    if preset:
        check_name(preset, "runner preset")
        return {"builtin": preset} if preset in BUILTIN_RUNNERS else {"agent": preset}
    return None


def worker_seed(
    name: str,
    *,
    cron: str | None = None,
    every: str | None = None,
    at: str | None = None,
    tz: str = "UTC",
    instructions: str = "",
    runner: str | None = None,
    command: list[str] | None = None,
    capabilities: list[str] | None = None,
    timeout: str = "10m",
) -> WorkerSeed:
    """A checked worker seed: one schedule form, an optional runner, capabilities."""
    check_name(name, "worker name")
    definition: dict[str, Any] = {"schedule": _schedule(name, cron, every, at, tz)}
    spec = _runner(name, runner, command)
    if spec is not None:
        definition["runner"] = spec
    definition["timeout"] = timeout
    if capabilities:
        for cap in capabilities:
            check_name(cap, "capability")
        definition["capabilities"] = list(dict.fromkeys(capabilities))
    return WorkerSeed(name=name, definition=definition, instructions=instructions)


@dataclass(frozen=True)
class WorkerDetail:
    """One worker as ``worker show`` prints it."""

    goal_id: str
    view: WorkerView
    definition: str
    prompt: str
    last_error: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id,
            **self.view.as_json(),
            **json_fields(self.view, "status runner"),
            **json_fields(self, "last_error definition prompt"),
        }
