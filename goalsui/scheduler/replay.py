"""Replay one goal's night now, on a fast clock, with the real scheduler.

The service's clock is a :class:`MovingClock` that jumps from one due time to the next:
the goal's intents are re-planned from the start of the window (pause, then resume at
that instant: the ordinary lifecycle rule "resume plans from now"), the scheduler claims
and runs each one at its due time (the runners run for real, at real speed), and when
the window is done the intents are re-planned from the real time, so nothing of the
replay is left overdue for the real scheduler to catch up on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from goalsui.domain.states import IntentStatus
from goalsui.domain.timeutil import MovingClock

if TYPE_CHECKING:
    from goalsui.service import Service

#: One turn of a replayed night may take this long before the replay gives up on it.
TURN_TIMEOUT_S = 1800.0


def _replan(service: Service, goal_id: str) -> None:
    """Plan every active intent of the goal from the service clock's now."""
    for intent in service.list_intents(goal_id=goal_id):
        if intent.status == IntentStatus.ACTIVE and intent.id is not None:
            service.pause_intent(intent.id)
            service.resume_intent(intent.id)


async def drive(
    service: Service, clock: MovingClock, goal_id: str, until: datetime
) -> list[tuple[str, str]]:
    """Fire the goal's intents due up to ``until`` in order; ``(worker, status)`` of each run.

    The clock jumps to each due time; each turn runs to its end before the next claim.
    """
    from goalsui.scheduler import Scheduler

    workers = {i.id: i.worker or "" for i in service.list_intents(goal_id=goal_id)}
    scheduler = Scheduler(service, clock=clock, grace_seconds=1)
    started: list[int] = []
    try:
        while True:
            due = [
                i.next_run_at
                for i in service.list_intents(goal_id=goal_id)
                if i.status == IntentStatus.ACTIVE and i.next_run_at is not None
            ]
            if not due or min(due) > until:
                break
            clock.now = min(due)
            started += await scheduler.tick()
            await scheduler.drain(timeout=TURN_TIMEOUT_S)
    finally:
        await scheduler.stop()
    runs = {r.id: r for r in service.list_runs(limit=len(started) + 10)}
    return [(workers.get(runs[r].intent_id, ""), str(runs[r].status)) for r in started if r in runs]


async def replay_window(
    service: Service,
    clock: MovingClock,
    goal_id: str,
    start: datetime,
    end: datetime,
    *,
    real_now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> list[tuple[str, str]]:
    """Re-plan the goal from ``start``, fire what falls due up to ``end``, re-plan from now."""
    clock.now = start
    _replan(service, goal_id)
    try:
        return await drive(service, clock, goal_id, end)
    finally:
        clock.now = max(real_now(), clock.now)
        _replan(service, goal_id)
