"""The outcome writer: records finished turns in batches, one transaction per batch
(see docs/architecture.md, "The scheduler").

It drains the :class:`~goalsui.scheduler.outcomes.Outcomes` queue the launcher fills.
Due turns start first: the writer waits while launched turns due now wait to start,
while a claim step runs, and while a burst is behind with slots free. A claim step may
take the waiting outcomes into its own transaction (:meth:`Outcomes.take`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from functools import partial

from goalsui.scheduler import tuning
from goalsui.scheduler.claim import Claimer
from goalsui.scheduler.outcomes import Outcomes, Reporter
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.troubles import retry_delay
from goalsui.scheduler.turns import Launcher
from goalsui.store.claims import Completion


@dataclass(eq=False)
class OutcomeWriter:
    """The task that records the waiting outcomes."""

    rt: Runtime
    outcomes: Outcomes
    reporter: Reporter
    launcher: Launcher
    claimer: Claimer
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    #: a planned retry of a failed write
    _retry: asyncio.TimerHandle | None = field(default=None, init=False)

    def open(self) -> None:
        """A fresh lock for a new event loop."""
        self._lock = asyncio.Lock()
        self._retry = None

    # -- the task --------------------------------------------------------------------------------
    async def run(self) -> None:
        """Record finished turns in batches until cancelled (the ``writer`` task)."""
        while True:
            outcomes = self.outcomes
            await outcomes.woken.wait()
            if len(outcomes.pending) <= tuning.FOLD_FIRST_MAX:
                # Let outcomes that end together share a commit; in the timed loop the next
                # step usually takes them first. (A backlog goes at once.)
                outcomes.backlog.clear()
                delay = tuning.WRITE_FALLBACK_DELAY if self.rt.started else tuning.WRITE_BATCH_DELAY
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(outcomes.backlog.wait(), delay)
            outcomes.woken.clear()
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
            if self.outcomes.pending:
                await self._write_pending()

    async def flush(self) -> bool:
        """Write every pending outcome (waits for a write in progress); False when a
        write failed (the outcomes wait again, a retry is planned)."""
        async with self._lock:
            while self.outcomes.pending:
                if not await self._write_pending():
                    return False
        return True

    async def _write_pending(self) -> bool:
        """Record the waiting outcomes, ``WRITE_CHUNK`` per transaction; False when a
        write failed.

        Every chunk is queued on the database thread at once (handing it the next chunk
        only after reporting the last left it waiting ~4 ms a chunk). Outcomes that could
        not be recorded are not dropped: they wait again, first in line, and are retried
        after a back-off; their turns keep their leases meanwhile.
        """
        batch = self.outcomes.take_all()
        size, now, rt = tuning.WRITE_CHUNK, self.rt.clock(), self.rt
        chunks = [batch[k : k + size] for k in range(0, len(batch), size)]
        futures = [
            rt.db(
                partial(rt.backend.release, rt.owner, chunk, now),
                notify=True,
            )
            for chunk in chunks
        ]
        failed: list[Completion] = []
        for chunk, future in zip(chunks, futures, strict=True):
            try:
                results = await future
            except Exception as exc:  # noqa: BLE001 - kept, retried after a back-off
                rt.fail("recording run outcomes failed", exc, part="writer")
                failed.extend(chunk)
                continue
            if not failed:
                rt.ok("writer")
            self.reporter.finished(chunk, results, now)
            if rt.started:
                self.claimer.ring_for(results)
        if failed:
            self.outcomes.give_back(failed)
            self._retry_later()
        return not failed

    def _retry_later(self) -> None:
        """Wake the writer again after the back-off of its failing streak."""
        loop = self.rt.loop
        if loop is None or self.rt.closing or self._retry is not None:
            return
        delay = retry_delay(self.rt.attempts("writer"), self.rt.settings.poll_interval)

        def again() -> None:
            self._retry = None
            if self.outcomes.pending:
                self.outcomes.wake()

        self._retry = loop.call_later(delay, again)

    def retry_in(self) -> float:
        """Seconds a caller waiting for the outcomes should let pass before trying again."""
        return retry_delay(max(self.rt.attempts("writer"), 1), self.rt.settings.poll_interval)
