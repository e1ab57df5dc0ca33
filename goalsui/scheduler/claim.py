"""Claim-and-launch: one tick claims everything due (a compare-and-set per batch, see
:mod:`goalsui.store.claims`) and starts its turns (see docs/architecture.md).

Starting due turns on time comes before bookkeeping: a burst's next claim step runs on
the database thread while this batch's turns start, and outcomes wait (at most
``PENDING_MAX_AGE``). Rows due within the lookahead are claimed before their due time
(each turn starts on time on a loop timer); a burst the free slots can take is claimed
``CLAIM_AHEAD_PER_ROW`` a row earlier (at most ``max_ahead``), so that its claims are
done when it falls due.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from goalsui.domain.states import IntentStatus
from goalsui.scheduler import tuning
from goalsui.scheduler.alarm import Alarm
from goalsui.scheduler.outcomes import Outcomes, Reporter
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.troubles import retry_delay
from goalsui.scheduler.tuning import IDLE_CAP, OVERDUE_FLOOR
from goalsui.scheduler.turns import Launcher
from goalsui.store.claims import (
    BurstProbe,
    ClaimResult,
    Completion,
    CompletionResult,
)


@dataclass(slots=True)
class _Step:
    """One claim step in flight on the database thread."""

    future: asyncio.Future[ClaimResult]
    batch: list[Completion]
    now: datetime
    due_by: datetime


@dataclass(eq=False)
class Claimer:
    """Claims due rows for the launcher and sets the alarm for the soonest due time; a
    step records the waiting ``outcomes`` in its own transaction."""

    rt: Runtime
    launcher: Launcher
    outcomes: Outcomes
    reporter: Reporter
    alarm: Alarm
    tick_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    known_soonest: datetime | None = field(default=None, init=False)  # as the last look saw it
    ahead: timedelta = field(init=False)  # how far ahead the next claim looks

    def __post_init__(self) -> None:
        self.ahead = self.rt.settings.lookahead

    def open(self) -> None:
        """A fresh lock for a new event loop."""
        self.tick_lock = asyncio.Lock()

    # -- the tick ----------------------------------------------------------------------------------
    async def tick(self) -> list[int]:
        """Claim and start everything due at ``clock()`` (up to the free slots), after
        recording overlaps of our running intents; returns the ids of the runs started."""
        if self.rt.closing:
            return []
        started: list[int] = []
        async with self.tick_lock:
            step = self._start_step(True, 0)
            last: tuple[ClaimResult, datetime, datetime] | None = None
            while step is not None:
                result = await self._finish_step(step)
                last = (result, step.now, step.due_by)
                step = None
                if result.full and not self.rt.closing:
                    # Pipelined: the next claim runs on the database thread while these
                    # turns are started here.
                    step = self._start_step(False, len(result.fired))
                await self._launch_guarded(result, step, started)
            await self._arm_after(last)
        if self.outcomes.pending:
            self.outcomes.wake()  # outcomes left by a burst: the writer records them
        return started

    async def _finish_step(self, step: _Step) -> ClaimResult:
        """Wait for a step; tell how its outcomes ended (they wait again if it failed)."""
        try:
            result = await step.future
        except BaseException:
            self.outcomes.give_back(step.batch)  # not recorded: keep them for the next write
            raise
        self.reporter.finished(step.batch, result.released, step.now)
        return result

    async def _launch_guarded(
        self, result: ClaimResult, step: _Step | None, started: list[int]
    ) -> None:
        """Start ``result``'s turns; if that is interrupted, the turns of the step in
        flight (its rows are claimed) start anyway."""
        try:
            started.extend(await self.launcher.launch(result))
        except BaseException:
            if step is not None:
                try:
                    more = await asyncio.shield(step.future)
                except Exception:  # noqa: BLE001 - nothing of it was kept
                    self.outcomes.give_back(step.batch)
                else:
                    self.reporter.finished(step.batch, more.released, step.now)
                    with contextlib.suppress(Exception):
                        await self.launcher.launch(more)
            raise

    async def _arm_after(self, last: tuple[ClaimResult, datetime, datetime] | None) -> None:
        """Set the alarm for what the last step saw (no step: slots full, look now)."""
        if last is not None:
            result, checked, claimed_by = last
            soonest, burst = self.with_mine(result.soonest), result.burst
        else:
            # No step (slots full): what a claim now would have taken is not ours.
            checked = self.rt.clock()
            claimed_by = checked + self.ahead
            soonest, burst = await self.soonest()
        self.arm(soonest, checked_at=checked, claimed_by=claimed_by, burst=burst)

    def _start_step(self, first: bool, claimed: int) -> _Step | None:
        """Submit one claim step to the database thread (``None``: nothing to do). Slots
        are our turns, running or waiting to start, plus ``claimed`` (fired by the step in
        flight); a turn that ended frees its slot at once (see :meth:`Outcomes.take`)."""
        rt = self.rt
        now = rt.clock()
        batch = self.outcomes.take(first, self.behind(now))
        free = rt.settings.max_concurrency - len(self.launcher.tasks) - claimed
        check = first and bool(self.launcher.info)
        due_by = now + self.ahead
        if free <= 0 and not check and not batch:
            return None
        call = partial(
            rt.backend.acquire,
            rt.owner,
            now,
            now + timedelta(seconds=rt.settings.lease_seconds),
            max(free, 0),
            due_by=due_by,
            burst=self.burst_probe(now),
            completions=batch,
            check_overlaps=check,
        )
        future: asyncio.Future[ClaimResult] = rt.db(call, notify=True)
        return _Step(future, batch, now, due_by)

    # -- the soonest due time ----------------------------------------------------------------------
    async def soonest(self) -> tuple[datetime | None, int]:
        """The soonest due time (ours included, see :meth:`with_mine`) and the burst due
        with it."""
        probe = self.burst_probe(self.rt.clock())
        soonest, burst = await self.rt.db(partial(self.rt.backend.soonest_burst, probe))
        return self.with_mine(soonest), burst

    def burst_probe(self, now: datetime) -> BurstProbe | None:
        """What a look asks about the burst due with the soonest row (None: this scheduler
        never claims further than its lookahead)."""
        settings = self.rt.settings
        if not settings.bursts_possible():
            return None
        by = now + settings.max_ahead + timedelta(seconds=settings.poll_interval)
        return BurstProbe(settings.lookahead, settings.max_concurrency, by)

    def ahead_for(self, burst: int) -> timedelta:
        """How far ahead the next claim looks: the lookahead, or for a burst
        ``CLAIM_AHEAD_PER_ROW`` per row the free slots take (at most ``max_ahead``)."""
        settings = self.rt.settings
        rows = min(burst, settings.max_concurrency - len(self.launcher.tasks))
        ahead = timedelta(seconds=rows * tuning.CLAIM_AHEAD_PER_ROW)
        return min(max(settings.lookahead, ahead), settings.max_ahead)

    def with_mine(self, soonest: datetime | None) -> datetime | None:
        """``soonest``, or the next occurrence of one of our running intents if sooner."""
        times = [soonest, *(i.next_run_at for i in self.launcher.info.values())]
        return min((t for t in times if t is not None), default=None)

    def behind(self, now: datetime) -> bool:
        """Rows were due and left unclaimed when the last step looked (a burst)."""
        return self.known_soonest is not None and self.known_soonest <= now

    def claim_waits(self) -> bool:
        """A burst is behind and slots are free: its next claim is coming."""
        rt = self.rt
        return (
            rt.started
            and not rt.closing
            and self.behind(rt.clock())
            and len(self.launcher.tasks) < rt.settings.max_concurrency
        )

    async def poll(self) -> bool:
        """A cheap look for other processes' changes; True when a tick is needed."""
        soonest, burst = await self.soonest()
        ahead = self.ahead_for(burst)
        if soonest is not None and soonest <= self.rt.clock() + ahead:
            self.ahead = ahead
            return True
        if soonest != self.known_soonest or ahead != self.ahead:
            self.arm(soonest, burst=burst)  # ... or a burst that came closer: ring earlier
        return False

    def ring_for(self, results: list[CompletionResult]) -> None:
        """Outcomes the writer recorded may have planned a fire (retry, next occurrence)
        before the alarm: ring for it on time."""
        nexts = [
            r.intent["next_run_at"]
            for r in results
            if r.applied
            and r.intent is not None
            and r.intent.get("status") == IntentStatus.ACTIVE
            and r.intent.get("next_run_at") is not None
        ]
        if not nexts:
            return
        soonest = self.with_mine(min(nexts))
        known = self.known_soonest
        if soonest is not None and soonest <= self.rt.clock() + self.rt.settings.lookahead:
            self.rt.wake()  # claimable now
        elif soonest is not None and (known is None or soonest < known):
            self.arm(soonest)

    # -- the alarm ---------------------------------------------------------------------------------
    def arm(
        self,
        soonest: datetime | None,
        checked_at: datetime | None = None,
        claimed_by: datetime | None = None,
        burst: int = 0,
    ) -> None:
        """Note the soonest due time and set the alarm for it (30 s cap idle, 0.5 s floor
        when overdue).

        ``checked_at``/``claimed_by``: when the claim that found ``soonest`` ran and the
        due time it claimed up to; something claimable then and still unclaimed is
        overdue. The alarm rings the look-ahead before the due time (longer for a
        ``burst``), but after a claim not before half a lookahead has passed: a stream of
        intents due a millisecond apart costs one claim per half lookahead, not one each.
        """
        self.known_soonest = soonest
        self.ahead = self.ahead_for(burst)
        self.alarm.ring_in(self._delay(soonest, checked_at, claimed_by))

    def _delay(
        self, soonest: datetime | None, checked_at: datetime | None, claimed_by: datetime | None
    ) -> float | None:
        """Seconds until the alarm rings; None: ring now."""
        if soonest is None:
            return IDLE_CAP
        if claimed_by is not None and soonest <= claimed_by:
            return OVERDUE_FLOOR  # it was claimable and is still not ours
        lookahead = self.rt.settings.lookahead
        ring = soonest - self.ahead
        if checked_at is not None:
            ring = max(ring, checked_at + lookahead / 2)
        delay = min((ring - self.rt.clock()).total_seconds(), IDLE_CAP)
        return None if delay <= 0 else delay


async def claim_loop(claimer: Claimer, polls: Callable[[], bool]) -> None:
    """The ``claim`` task: tick when woken (a change, the alarm); while ``polls()``
    (nothing else hears other processes' changes) take a cheap look every
    ``poll_interval``, else sleep until woken, at most ``IDLE_CAP`` (parked: readiness
    counts that as a current heartbeat, so an idle loop needs no timer)."""
    rt = claimer.rt
    wake = rt.wake_event
    assert wake is not None
    interval = rt.settings.poll_interval

    def next_look() -> float:
        return time.monotonic() + (interval if polls() else IDLE_CAP)

    need_tick = True
    next_poll = next_look()
    while not rt.closing:
        rt.beat()
        if need_tick:
            need_tick = False
            wake.clear()
            try:
                await claimer.tick()
                rt.ok("claim")
                if not claimer.outcomes.pending:
                    rt.ok("writer")  # the step recorded the outcomes that waited
            except Exception as exc:  # noqa: BLE001 - keep going; report it
                rt.fail("claiming due intents failed", exc, part="claim")
                # Degraded (a full disk, a database that does not answer): try again
                # after a back-off, whether or not anything wakes the loop meanwhile.
                need_tick = True
                rt.beat(parked=True)
                await back_off(rt, wake, retry_delay(rt.attempts("claim"), interval))
                continue
        rt.beat(parked=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), max(0.0, next_poll - time.monotonic()))
            need_tick = True
            continue
        next_poll = next_look()
        if not polls():
            continue  # the alarm and the cross-process wakes cover it
        rt.beat()
        try:
            need_tick = await claimer.poll()
            rt.ok("claim")
        except Exception as exc:  # noqa: BLE001
            rt.fail("polling the database failed", exc, part="claim")
            need_tick = True  # a tick retries it after the back-off


async def back_off(rt: Runtime, wake: asyncio.Event, delay: float) -> None:
    """Wait ``delay`` seconds before a retry; wakes meanwhile do not cut it short (a busy
    database would otherwise be retried at every change), stopping does."""
    end = time.monotonic() + delay
    while not rt.closing:
        left = end - time.monotonic()
        if left <= 0:
            return
        wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), left)
