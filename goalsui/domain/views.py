"""What a goal and its workers look like, and how a goal record and its intents become one
(intents read through a small protocol, so tables and records both fit): filled by the service
and by the KB's first-frame read alike (no database imports). See docs/architecture.md, "Views"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from goalsui.domain.records import GoalRecord, ThreadRecord
from goalsui.domain.states import IntentStatus


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


class IntentFields(Protocol):
    """What a goal's view reads of an intent."""

    @property
    def id(self) -> int | None: ...
    @property
    def goal_id(self) -> str | None: ...
    @property
    def worker(self) -> str | None: ...
    @property
    def operation_key(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def schedule(self) -> str | None: ...
    @property
    def timezone(self) -> str: ...
    @property
    def next_run_at(self) -> datetime | None: ...
    @property
    def runner(self) -> dict[str, Any] | None: ...
    @property
    def last_error(self) -> str | None: ...


IntentT = TypeVar("IntentT", bound=IntentFields)


def worker_intent_key(goal_id: str, worker: str) -> str:
    """The operation key of a worker's intent (one per goal and worker)."""
    return f"worker:{goal_id}/{worker}"


def is_worker_schedule(intent: IntentFields) -> bool:
    """True for the intent the KB owns for a worker (not a follow-up naming it)."""
    return bool(
        intent.worker
        and intent.goal_id
        and intent.operation_key == worker_intent_key(intent.goal_id, intent.worker)
    )


def by_goal(intents: Iterable[IntentT]) -> dict[str, list[IntentT]]:
    """Intents grouped by their goal (intents without a goal left out)."""
    grouped: dict[str, list[IntentT]] = {}
    for intent in intents:
        if intent.goal_id is not None:
            grouped.setdefault(intent.goal_id, []).append(intent)
    return grouped


def goal_view(goal: GoalRecord, intents: Iterable[IntentFields]) -> GoalView:
    """The view of a goal and its intents (workers removed from the KB left out)."""
    workers = [
        WorkerView(
            name=i.worker or "",
            schedule=i.schedule,
            timezone=i.timezone,
            kind=i.kind,
            intent_id=i.id,
            next_run_at=i.next_run_at,
            status=i.status,
            runner=i.runner,
        )
        for i in sorted(intents, key=lambda i: i.worker or "")
        if is_worker_schedule(i)
        and not (i.status == IntentStatus.CANCELLED and i.last_error and "removed" in i.last_error)
    ]
    return GoalView(
        goal_id=goal.goal_id,
        name=goal.name,
        task=goal.task,
        status=goal.status,
        path=goal.kb_path,
        error=goal.error,
        sort_order=goal.sort_order,
        workers=workers,
    )


def quiet_home_thread(
    thread: ThreadRecord, todos: Iterable[object], messages: Iterable[object] = ()
) -> bool:
    """True for a worker's home thread with no todo or message yet (the console hides it)."""
    return bool(thread.worker) and not any(todos) and not any(messages)
