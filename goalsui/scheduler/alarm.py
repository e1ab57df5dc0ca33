"""The alarm clock: an APScheduler ``AsyncIOScheduler`` date job at the soonest due time
wakes the claim loop (see docs/architecture.md, "The scheduler").

It rings the claim's look-ahead before the due time, at most ``IDLE_CAP`` seconds from
now when nothing is due sooner, and after ``OVERDUE_FLOOR`` while something claimable
stays unclaimed (slots full, or another scheduler holds it).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.tuning import IDLE_CAP, OVERDUE_FLOOR

if TYPE_CHECKING:
    from goalsui.scheduler.claim import Claimer

log = logging.getLogger("goalsui.scheduler")
JOB_ID = "goalsui-alarm"


class Alarm:
    """Rings the claim loop at the right time."""

    def __init__(self, rt: Runtime, claimer: Claimer) -> None:
        self.rt = rt
        self.claimer = claimer
        self._aps: Any = None
        self._at: float | None = None  # loop.time() of the armed alarm

    def start(self) -> None:
        """Start the alarm clock (inside the running loop: APScheduler 3 needs one to start)."""
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        aps = AsyncIOScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 1},
        )
        aps.start()
        self._aps = aps

    def shutdown(self) -> None:
        if self._aps is not None:
            try:
                self._aps.shutdown(wait=False)
            except Exception as exc:  # noqa: BLE001 - stopping anyway
                log.debug("alarm clock shutdown: %s", exc)
            self._aps = None
        self._at = None

    async def run(self) -> None:
        """The ``alarm`` task: keeps watch over the alarm clock until cancelled."""
        try:
            while True:
                await asyncio.sleep(IDLE_CAP)
                if self._aps is None or not self._aps.running:
                    raise RuntimeError("the alarm clock (APScheduler) stopped running")
        finally:
            self.shutdown()

    def arm(
        self,
        soonest: datetime | None,
        checked_at: datetime | None = None,
        claimed_by: datetime | None = None,
        burst: int = 0,
    ) -> None:
        """Set the alarm at the soonest due time (30 s cap idle, 0.5 s floor when overdue).

        ``checked_at``: when the claim that found ``soonest`` ran (default: now), and
        ``claimed_by`` the due time it claimed up to. Something claimable then and still
        unclaimed is overdue: look again after the floor. Something that fell due since
        is claimed at once. The alarm rings the claim's look-ahead before the due time
        (longer for a ``burst``), but after a claim not before half a lookahead has
        passed: a stream of intents due a millisecond apart costs one claim per half
        lookahead (each still claimed at least that early), not one claim per intent.
        """
        claimer = self.claimer
        claimer.known_soonest = soonest
        claimer.ahead = claimer.ahead_for(burst)
        if self._aps is None or self.rt.loop is None:
            return
        delay = self._delay(soonest, checked_at, claimed_by)
        if delay is None:
            self._at = None
            self.rt.wake()
            return
        at = self.rt.loop.time() + delay
        if self._at is not None and abs(self._at - at) < 0.0005:
            return
        self._at = at
        try:
            self._aps.add_job(
                self._ring,
                "date",
                run_date=datetime.now(UTC) + timedelta(seconds=delay),
                id=JOB_ID,
                replace_existing=True,
            )
        except Exception as exc:  # noqa: BLE001 - the poll still wakes us
            log.warning("cannot arm the alarm: %s", exc)

    def _delay(
        self, soonest: datetime | None, checked_at: datetime | None, claimed_by: datetime | None
    ) -> float | None:
        """Seconds until the alarm rings; None: ring now."""
        if soonest is None:
            return IDLE_CAP
        if claimed_by is not None and soonest <= claimed_by:
            return OVERDUE_FLOOR  # it was claimable and is still not ours
        lookahead = self.rt.settings.lookahead
        ring = soonest - self.claimer.ahead
        if checked_at is not None:
            ring = max(ring, checked_at + lookahead / 2)
        delay = min((ring - self.rt.clock()).total_seconds(), IDLE_CAP)
        return None if delay <= 0 else delay

    async def _ring(self) -> None:
        self._at = None
        self.rt.wake()
