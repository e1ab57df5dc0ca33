"""Authoring workers (``service.authoring``): ``worker add|remove|pause|resume|show``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from goalsui.domain.cron import validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.names import check_name
from goalsui.domain.records import saved_id
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.domain.views import WorkerView, json_fields
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.kb.config import BUILTIN_RUNNERS
from goalsui.kb.layout import WorkerSeed
from goalsui.service.context import ServiceContext
from goalsui.service.goals import Goals
from goalsui.service.intents import Intents
from goalsui.service.kbindex import Index
from goalsui.service.workers import Workers
from goalsui.store.models import Intent


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


class Authoring:
    """Adding, removing, pausing, resuming and showing the workers of a goal."""

    def __init__(
        self, ctx: ServiceContext, goals: Goals, workers: Workers, intents: Intents, index: Index
    ) -> None:
        self.ctx = ctx
        self.goals = goals
        self.workers = workers
        self.intents = intents
        self.index = index

    def add_worker(self, goal_id: str, seed: WorkerSeed) -> WorkerView:
        """Add a worker to a goal and register its schedule; on failure nothing is left."""
        from goalsui.kb import workers

        self.goals.get(goal_id)

        def register() -> None:
            problems = [
                p
                for p in self.index.sync([goal_id])
                if p.path.startswith(f"{goal_id}/workers/{seed.name}/")
            ]
            if problems:
                raise ValidationError(problems[0].message)

        try:
            workers.add_worker(self.ctx.kb, goal_id, seed, register=register)
        except BaseException:
            with contextlib.suppress(Exception):  # the folder is gone: its schedule follows
                self.index.sync([goal_id])
            raise
        self.ctx.journal.record("worker added", f"{goal_id}/{seed.name}")
        return self.workers.view(goal_id, seed.name)

    def remove_worker(self, goal_id: str, worker: str) -> None:
        """Delete a worker's folder; its schedule is cancelled (its run history is kept)."""
        from goalsui.kb import workers

        workers.remove_worker(self.ctx.kb, goal_id, worker)
        self.index.sync([goal_id])
        self.ctx.journal.record("worker removed", f"{goal_id}/{worker}")

    def pause_worker(self, goal_id: str, worker: str) -> Intent:
        """Pause a worker's schedule (a running tick finishes first)."""
        return self.intents.pause(saved_id(self.workers.intent(goal_id, worker)))

    def resume_worker(self, goal_id: str, worker: str) -> Intent:
        """Resume a paused (or auto-disabled) worker, planned from now."""
        return self.intents.resume(saved_id(self.workers.intent(goal_id, worker)))

    def show_worker(self, goal_id: str, worker: str) -> WorkerDetail:
        """A worker's schedule state, definition file and prompt."""
        view = self.workers.view(goal_id, worker)
        last_error = self.intents.get(view.intent_id).last_error if view.intent_id else None
        return WorkerDetail(
            goal_id=goal_id,
            view=view,
            definition=self.ctx.kb.tree(goal_id).read(f"workers/{worker}/definition.yaml"),
            prompt=self.ctx.kb.tree(goal_id).read(f"workers/{worker}/prompt.md"),
            last_error=last_error,
        )
