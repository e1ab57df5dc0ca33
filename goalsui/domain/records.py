"""The records the console, the command line and the first-frame reader show. Pure.

Frozen values named like the tables' fields; a row maps to one with ``record()``. See
docs/architecture.md, "Values and tables"."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from goalsui.domain.states import RunStatus


class _Saved(Protocol):
    @property
    def id(self) -> int | None: ...


def saved_id(row: _Saved) -> int:
    """The id of a row the service hands out (only an uninserted row has none)."""
    if row.id is None:
        raise ValueError(f"this {type(row).__name__} has not been saved: it has no id")
    return row.id


R = TypeVar("R")


def record_of(cls: type[R], row: object) -> R:
    """The record ``cls`` of ``row``: its fields read by name from the row's attributes."""
    return cls(*(getattr(row, name) for name in cls.__match_args__))  # type: ignore[attr-defined]  # a record is a dataclass


@dataclass(frozen=True, slots=True)
class GoalRecord:
    """A goal of the KB index (its :class:`~goalsui.domain.views.GoalView` adds the workers)."""

    goal_id: str
    name: str
    kb_path: str
    task: str = ""
    status: str = "active"
    sort_order: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class IntentRecord:
    """A future wake-up as shown (the scheduler's lease fields left out)."""

    id: int
    title: str
    kind: str
    status: str
    created_at: datetime
    updated_at: datetime
    instruction: str = ""
    schedule: str | None = None
    timezone: str = "UTC"
    next_run_at: datetime | None = None
    thread_id: int | None = None
    goal_id: str | None = None
    worker: str | None = None
    event_source: str | None = None
    event_filter: dict[str, Any] | None = None
    cooldown_s: int = 0
    max_fires: int | None = None
    fires: int = 0
    expires_at: datetime | None = None
    checklist: str | None = None
    runner: dict[str, Any] | None = None
    timeout_s: int | None = None
    attempts: int = 0
    consecutive_failures: int = 0
    operation_key: str | None = None
    last_error: str | None = None
    last_fired_at: datetime | None = None
    pending_trigger: str | None = None
    pending_event_id: int | None = None
    active_hours: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One attempt of an intent as shown (the transcript and the process left out)."""

    id: int
    intent_id: int
    started_at: datetime
    status: str = RunStatus.RUNNING
    attempt: int = 1
    trigger: str = "schedule"
    reason: str | None = None
    planned_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    output_path: str | None = None
    event_id: int | None = None
    dismissed: bool = False
    needs_review: bool = False
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None

    @property
    def status_label(self) -> str:
        """The status for people: ``needs review`` while it waits for the operator."""
        return "needs review" if self.needs_review else self.status


@dataclass(frozen=True, slots=True)
class ThreadRecord:
    """A conversation; a worker's home thread names its goal and worker."""

    id: int
    title: str
    created_at: datetime
    private: bool = False
    revision: int = 0
    goal_id: str | None = None
    worker: str | None = None


@dataclass(frozen=True, slots=True)
class TodoRecord:
    id: int
    thread_id: int
    text: str
    created_at: datetime
    done: bool = False
    position: int = 0
    completed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A message of a thread (or of a goal), with where it came from."""

    id: int
    content: str
    created_at: datetime
    role: str = "user"
    thread_id: int | None = None
    goal_id: str | None = None
    intent_id: int | None = None
    run_id: int | None = None
    provenance: str | None = None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """A received event; its payload is untrusted data."""

    id: int
    source: str
    delivery_id: str
    received_at: datetime
    payload: Any = None
    matched_intent_ids: list[Any] | None = None


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """An entry of the event log: who did what, when (and for which run's tool call)."""

    id: int
    at: datetime
    actor: str
    action: str
    subject: str = ""
    detail: str = ""
    run_id: int | None = None
    tool: str | None = None
