"""How a goal record and its intents become the :class:`GoalView` every client shows;
intents are read through a small protocol, so tables and records both fit."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from goalsui.domain.records import GoalRecord
from goalsui.domain.states import IntentStatus
from goalsui.domain.views import GoalView, WorkerView

WORKER_KEY = "worker:{goal_id}/{worker}"


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


class _HomeFields(Protocol):
    @property
    def worker(self) -> str | None: ...


IntentT = TypeVar("IntentT", bound=IntentFields)


def worker_intent_key(goal_id: str, worker: str) -> str:
    """The operation key of a worker's intent (one per goal and worker)."""
    return WORKER_KEY.format(goal_id=goal_id, worker=worker)


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
    thread: _HomeFields, todos: Iterable[object], messages: Iterable[object] = ()
) -> bool:
    """True for a worker's home thread with no todo or message yet (the console hides it)."""
    return bool(thread.worker) and not any(todos) and not any(messages)
