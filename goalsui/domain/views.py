"""What a goal and its workers look like: filled by the service and by the KB's
first-frame read alike (no database imports). See docs/architecture.md, "Views"."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def json_fields(row: object, names: str, *, iso: bool = True) -> dict[str, Any]:
    """The named fields of ``row`` in that order; with ``iso``, a datetime as ISO text to the second."""
    out = {}
    for name in names.split():
        value = getattr(row, name)
        if iso and isinstance(value, datetime):
            value = value.isoformat(timespec="seconds")
        out[name] = value
    return out


@dataclass
class WorkerView:
    """A worker of a goal; the schedule fields are None until the records are read."""

    name: str
    schedule: str | None = None
    timezone: str = ""
    kind: str | None = None
    intent_id: int | None = None
    next_run_at: datetime | None = None
    status: str | None = None
    runner: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The fields the command line prints with ``--json``."""
        return json_fields(self, "name schedule timezone intent_id next_run_at")


@dataclass
class GoalView:
    """A goal of the KB index with its workers, sorted by name."""

    goal_id: str
    name: str
    task: str = ""
    status: str = "active"
    path: str = ""
    error: str | None = None
    sort_order: int = 0
    workers: list[WorkerView] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The fields the command line prints with ``--json``."""
        workers = [w.as_json() for w in self.workers]
        return {**json_fields(self, "goal_id name task status path"), "workers": workers}


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the KB or the database: the file, the line, the reason."""

    path: str
    line: int | None
    message: str

    def as_json(self) -> dict[str, Any]:
        """The fields ``goalsui doctor --json`` prints."""
        return json_fields(self, "path line message")


@dataclass(frozen=True)
class EmitResult:
    """What an event did: its id, the intents it fired, and whether it was a replay."""

    event_id: int
    fired: list[int]
    duplicate: bool = False
