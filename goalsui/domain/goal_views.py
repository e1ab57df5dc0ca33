"""How a goal record and its intents become the :class:`GoalView` every client shows.

Pure: the rows may be the database's rows or the values of :mod:`goalsui.domain.records`
with the same fields (the console's first frame reads the database without the ORM, see
:mod:`goalsui.service.quick`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from goalsui.domain.states import IntentStatus
from goalsui.domain.views import GoalView, WorkerView

WORKER_KEY = "worker:{goal_id}/{worker}"


def worker_intent_key(goal_id: str, worker: str) -> str:
    """The operation key of a worker's intent (one per goal and worker)."""
    return WORKER_KEY.format(goal_id=goal_id, worker=worker)


def is_worker_schedule(intent: Any) -> bool:
    """True for the intent the KB owns for a worker (not another intent naming the worker,
    e.g. a follow-up a worker's turn scheduled)."""
    return bool(
        intent.worker
        and intent.goal_id
        and intent.operation_key == worker_intent_key(intent.goal_id, intent.worker)
    )


def by_goal(intents: Iterable[Any]) -> dict[str, list[Any]]:
    """Intents grouped by their goal (intents without a goal left out)."""
    grouped: dict[str, list[Any]] = {}
    for intent in intents:
        if intent.goal_id is not None:
            grouped.setdefault(intent.goal_id, []).append(intent)
    return grouped


def goal_view(goal: Any, intents: list[Any]) -> GoalView:
    """The view of a goal row and its intents (workers removed from the KB left out)."""
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


def quiet_home_thread(thread: Any, todos: Iterable[Any], messages: Iterable[Any] = ()) -> bool:
    """True for a worker's home thread with nothing in it yet (no todo, no message): the
    console lists a home thread once its worker has written something there."""
    return bool(getattr(thread, "worker", None)) and not any(todos) and not any(messages)
