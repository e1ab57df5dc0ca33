"""The alarm clock: an APScheduler ``AsyncIOScheduler`` date job that wakes the claim
loop (sets its event) when the claimer asks (see docs/architecture.md, "The scheduler").

The claimer decides when (:meth:`goalsui.scheduler.claim.Claimer.arm`); the alarm
only keeps one job and rings.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.tuning import IDLE_CAP

log = logging.getLogger("goalsui.scheduler")
JOB_ID = "goalsui-alarm"


class Alarm:
    """Rings the claim loop when asked."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
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
        """The ``alarm`` task: keeps watch over the alarm clock until cancelled, or until
        the scheduler stops (which shuts the clock down while turns may still be ending)."""
        try:
            while True:
                await asyncio.sleep(IDLE_CAP)
                if self.rt.closing:
                    return
                if self._aps is None or not self._aps.running:
                    raise RuntimeError("the alarm clock (APScheduler) stopped running")
        finally:
            self.shutdown()

    def ring_in(self, delay: float | None) -> None:
        """Ring after ``delay`` seconds (None: now)."""
        if self._aps is None or self.rt.loop is None:
            return
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

    async def _ring(self) -> None:
        self._at = None
        self.rt.wake()
