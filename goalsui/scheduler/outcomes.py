"""Between the turns and the database: the queue of finished turns' outcomes, and how a
recorded batch is told (see docs/architecture.md, "The scheduler").

The launcher puts an outcome in :class:`Outcomes` when its turn ends; the outcome writer
(:mod:`~goalsui.scheduler.writer`) or the next claim step (in its own transaction, see
:meth:`Outcomes.take`) records it, and :class:`Reporter` tells the subscribers how it
ended. Both are built before the parts that use them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime

from goalsui.scheduler import tuning
from goalsui.scheduler.alerting import Alerter
from goalsui.scheduler.events import RunningInfo, SchedulerEvent
from goalsui.scheduler.runtime import Runtime
from goalsui.store.claims import Completion, CompletionResult


class Outcomes:
    """Outcomes waiting to be recorded, and the signal that wakes the writer."""

    def __init__(self) -> None:
        self.pending: list[Completion] = []
        self._oldest = 0.0  # time.monotonic() when the oldest waiting outcome ended
        self.woken = asyncio.Event()
        self.backlog = asyncio.Event()  # more than tuning.FOLD_FIRST_MAX outcomes wait

    def open(self) -> None:
        """Fresh signals for a new event loop."""
        self.woken, self.backlog = asyncio.Event(), asyncio.Event()

    def put(self, done: Completion) -> None:
        """A turn ended: its outcome waits to be recorded."""
        if not self.pending:
            self._oldest = time.monotonic()
        self.pending.append(done)
        if len(self.pending) > tuning.FOLD_FIRST_MAX:
            self.backlog.set()  # the writer's batch delay ends early

    def wake(self) -> None:
        """Wake the writer."""
        self.woken.set()

    def take(self, first: bool, behind: bool) -> list[Completion]:
        """The outcomes a claim step records in its own transaction (and no longer waits).

        The first step of a tick takes them (in a burst, that is ``behind``, only up to
        ``FOLD_FIRST_MAX``); other steps only claim (due turns start first), unless
        ``PENDING_LIMIT`` outcomes wait or the oldest has waited ``PENDING_MAX_AGE`` s.
        """
        pending = self.pending
        fold = (
            (first and (len(pending) <= tuning.FOLD_FIRST_MAX or not behind))
            or len(pending) >= tuning.PENDING_LIMIT
            or (bool(pending) and time.monotonic() - self._oldest >= tuning.PENDING_MAX_AGE)
        )
        return self.take_all() if fold else []

    def take_all(self) -> list[Completion]:
        """Every waiting outcome (the writer's batch)."""
        pending, self.pending = self.pending, []
        return pending

    def give_back(self, batch: list[Completion]) -> None:
        """A write that took ``batch`` failed: they wait again (first in line)."""
        self.pending[:0] = batch


class Reporter:
    """Tells the subscribers how recorded outcomes ended (and alerts on failures);
    ``forget(run_id)`` drops a recorded run from the running ones."""

    def __init__(
        self, rt: Runtime, forget: Callable[[int], RunningInfo | None], alerter: Alerter
    ) -> None:
        self.rt, self.forget, self.alerter = rt, forget, alerter

    def finished(
        self, batch: list[Completion], results: list[CompletionResult], now: datetime
    ) -> None:
        """Forget the recorded runs and tell the subscribers how they ended."""
        by_run = {r.completion.run_id: r for r in results}
        for done in batch:
            info = self.forget(done.run_id)
            result = by_run.get(done.run_id)
            if result is not None:
                self._report(info, result, now)

    def _report(self, info: RunningInfo | None, result: CompletionResult, now: datetime) -> None:
        c = result.completion
        title = info.title if info else ""
        status = result.run_status
        detail = f" - {c.reason}" if c.reason else ""
        self.rt.emit(
            SchedulerEvent(
                "run-finished",
                c.intent_id,
                c.run_id,
                status,
                f"run {c.run_id} of '{title}' {status}{detail}",
                title=title,
                trigger=info.trigger if info else None,
                at=now,
            )
        )
        decision = result.decision
        if result.applied and decision is not None and decision.failure and result.intent:
            run = {
                "id": c.run_id,
                "intent_id": c.intent_id,
                "status": status,
                "reason": c.reason,
                "trigger": info.trigger if info else None,
                "started_at": info.started_at if info else now,
                "finished_at": now,
                "exit_code": c.exit_code,
                "output_tail": c.output_tail,
                "output_path": c.output_path,
                "event_id": c.event_id,
                "owner": self.rt.owner,
            }
            self.alerter.after_failure(result.intent, run, status, decision.auto_disabled)
