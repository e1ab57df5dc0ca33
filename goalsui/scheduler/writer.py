"""The outcome writer: records finished turns in batches, one transaction per batch
(see docs/architecture.md, "The scheduler").

Due turns start first: the writer waits while launched turns due now wait to start,
while a claim step runs, and while a burst is behind with slots free. A claim step may
take the waiting outcomes into its own transaction (:meth:`OutcomeWriter.take`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from goalsui.scheduler import tuning
from goalsui.scheduler.events import RunningInfo, SchedulerEvent
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.troubles import retry_delay
from goalsui.store.claims import Completion, CompletionResult

if TYPE_CHECKING:
    from goalsui.scheduler.alerting import Alerter
    from goalsui.scheduler.claim import Claimer
    from goalsui.scheduler.turns import Launcher


class OutcomeWriter:
    """Outcomes waiting to be recorded, and the task that records them."""

    def __init__(self, rt: Runtime, launcher: Launcher, alerter: Alerter) -> None:
        self.rt = rt
        self.launcher = launcher
        self.alerter = alerter
        self.claimer: Claimer  # set by the scheduler once both exist
        self.pending: list[Completion] = []
        self._oldest = 0.0  # time.monotonic() when the oldest waiting outcome ended
        self._wake = asyncio.Event()
        self._backlog = asyncio.Event()  # more than tuning.FOLD_FIRST_MAX outcomes wait
        self._lock = asyncio.Lock()
        self._retry: asyncio.TimerHandle | None = None  # a planned retry of a failed write

    def open(self) -> None:
        """Fresh signals for a new event loop."""
        self._wake, self._backlog, self._lock = asyncio.Event(), asyncio.Event(), asyncio.Lock()
        self._retry = None

    # -- queueing ----------------------------------------------------------------------------
    def queue(self, done: Completion) -> None:
        """A turn ended: its outcome waits to be recorded."""
        if not self.pending:
            self._oldest = time.monotonic()
        self.pending.append(done)
        if len(self.pending) > tuning.FOLD_FIRST_MAX:
            self._backlog.set()  # the writer's batch delay ends early

    def wake(self) -> None:
        self._wake.set()

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
        if not fold:
            return []
        self.pending = []
        return pending

    def give_back(self, batch: list[Completion]) -> None:
        """A step that took ``batch`` failed: they wait again (first in line)."""
        self.pending[:0] = batch

    # -- the task --------------------------------------------------------------------------------
    async def run(self) -> None:
        """Record finished turns in batches until cancelled (the ``writer`` task)."""
        while True:
            await self._wake.wait()
            if len(self.pending) <= tuning.FOLD_FIRST_MAX:
                # Let outcomes that end together share a commit; in the timed loop the next
                # step usually takes them first. (A backlog goes at once.)
                self._backlog.clear()
                delay = tuning.WRITE_FALLBACK_DELAY if self.rt.started else tuning.WRITE_BATCH_DELAY
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._backlog.wait(), delay)
            self._wake.clear()
            await self._write_when_due()

    async def _write_when_due(self) -> None:
        """One wake of the writer: write now unless claims come first."""
        claimer, rt = self.claimer, self.rt
        if claimer.tick_lock.locked():
            # Claims first: write when the tick is over (rather than waking again for
            # every turn that ends meanwhile).
            async with claimer.tick_lock:
                pass
        if self.launcher.starting and not rt.closing:
            return  # due turns wait to start: the last of them to end wakes us again
        if claimer.claim_waits():
            return  # a burst's claims come first (the tick's end wakes us)
        if not rt.started:
            await self.flush()
            return
        # Timed loop: one transaction per wake; outcomes ending meanwhile set the wake
        # again and go in the next batch (not in a string of tiny transactions).
        async with self._lock:
            if self.pending:
                await self._write_pending()

    async def flush(self) -> bool:
        """Write every pending outcome (waits for a write in progress); False when a
        write failed (the outcomes wait again, a retry is planned)."""
        async with self._lock:
            while self.pending:
                if not await self._write_pending():
                    return False
        return True

    async def _write_pending(self) -> bool:
        """Record the waiting outcomes, ``WRITE_CHUNK`` per transaction; False when a
        write failed.

        Pipelined: the next chunk is written on the database thread while the
        subscribers here hear how the previous one ended. Outcomes that could not be
        recorded (a full disk, a database that does not answer) are not dropped: they
        wait again, first in line, and the writer retries after a back-off (a claim
        step may take them first). Their turns keep their leases meanwhile.
        """
        batch, self.pending = self.pending, []
        chunks = [
            batch[k : k + tuning.WRITE_CHUNK] for k in range(0, len(batch), tuning.WRITE_CHUNK)
        ]
        now = self.rt.clock()

        def write(chunk: list[Completion]) -> asyncio.Future[list[CompletionResult]]:
            call = partial(
                self.rt.backend.complete_runs,
                owner=self.rt.owner,
                now=now,
                items=chunk,
            )
            return self.rt.db_now(call, notify=True)

        future = write(chunks[0]) if chunks else None
        for k, chunk in enumerate(chunks):
            assert future is not None
            try:
                results = await future
            except Exception as exc:  # noqa: BLE001 - kept, retried after a back-off
                self.rt.fail("recording run outcomes failed", exc, part="writer")
                self.give_back([c for rest in chunks[k:] for c in rest])
                self._retry_later()
                return False
            self.rt.ok("writer")
            future = write(chunks[k + 1]) if k + 1 < len(chunks) else None
            self.finished(chunk, results, now)
            if self.rt.started:
                self.claimer.ring_for(results)
        return True

    def _retry_later(self) -> None:
        """Wake the writer again after the back-off of its failing streak."""
        loop = self.rt.loop
        if loop is None or self.rt.closing or self._retry is not None:
            return
        delay = retry_delay(self.rt.attempts("writer"), self.rt.settings.poll_interval)

        def again() -> None:
            self._retry = None
            if self.pending:
                self.wake()

        self._retry = loop.call_later(delay, again)

    def retry_in(self) -> float:
        """Seconds a caller waiting for the outcomes should let pass before trying again."""
        return retry_delay(max(self.rt.attempts("writer"), 1), self.rt.settings.poll_interval)

    # -- telling -------------------------------------------------------------------------------------
    def finished(
        self, batch: list[Completion], results: list[CompletionResult], now: datetime
    ) -> None:
        """Forget the recorded runs and tell the subscribers how they ended."""
        by_run = {r.completion.run_id: r for r in results}
        for done in batch:
            info = self.launcher.forget(done.run_id)
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
