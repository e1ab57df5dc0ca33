"""How a scheduler process sets up the interpreter: the garbage collector and the GIL.

``goalsui daemon`` calls :func:`settle_heap` once its scheduler has started; the
benchmarks call it at the same point, so that they measure what the daemon runs. Every
scheduler pauses automatic collection during a burst (:class:`BurstPause`).
"""

from __future__ import annotations

import asyncio
import gc
import sys

#: Allocations between two young-generation collections (CPython's default is 700).
#: A burst of fires keeps tens of thousands of small records alive until their outcomes
#: are written; with the default, every one of them is traversed again and again by
#: the young and middle generations: about 12 % of a 10,000-intent burst, measured
#: here, against 3 % with this threshold.
YOUNG_THRESHOLD = 10_000

#: Seconds a thread holds the GIL before another that waits for it gets it (CPython's
#: default is 5 ms). A claim step plans in Python on the database thread for ~10 ms; a
#: turn due meanwhile waited up to the whole default interval for the event loop to run:
#: most of the latest 1 % of fires due one a millisecond fell in a claim step. With 0.2 ms
#: that lateness p99 went from ~2.0 to ~1.5 ms at real-time priority, and from ~3.2 to
#: ~3.0 ms at normal priority on a quiet 2-core VM (bench scheduler's spread, alternating
#: runs; what real-time priority takes away on top is how the OS schedules the threads).
SWITCH_INTERVAL = 0.0002

#: Runs claimed and not yet recorded from which automatic collection pauses.
PAUSE_AT = 1_000
#: Seconds: the longest pause; a burst still in flight after it is collected as usual.
PAUSE_MAX = 10.0


def settle_heap() -> None:
    """Keep the start-up heap (modules, ORM and pydantic metadata) out of every later
    collection (``gc.freeze``), collect the young generation less often, and let the
    event loop take the GIL sooner (:data:`SWITCH_INTERVAL`)."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


class BurstPause:
    """Pauses automatic (cyclic) collection while at least :data:`PAUSE_AT` runs are
    claimed and not yet recorded, for at most :data:`PAUSE_MAX` seconds a burst.

    A collection during a burst traverses every waiting task and record: in a
    10,000-fire burst a middle-generation collection (~30 ms) and young ones (~15 ms)
    ran after the due instant, delaying the turns and the writes (measured here). Freed
    memory does not wait (reference counting frees all but cycles); cycles are collected
    when the burst is recorded. A collector the host disabled stays disabled.
    """

    def __init__(self) -> None:
        self._timer: asyncio.Handle | None = None
        self._armed = True  # False after a pause, until the runs in flight drop below PAUSE_AT

    @property
    def active(self) -> bool:
        return self._timer is not None

    def launched(self, loop: asyncio.AbstractEventLoop, in_flight: int) -> None:
        """Runs were claimed: ``in_flight`` are not yet recorded (pause from PAUSE_AT)."""
        if in_flight >= PAUSE_AT and self._armed and gc.isenabled():
            self._armed = False
            gc.disable()
            self._timer = loop.call_later(PAUSE_MAX, self.end)

    def recorded(self, loop: asyncio.AbstractEventLoop, in_flight: int) -> None:
        """Outcomes were recorded: ``in_flight`` runs are left. Below PAUSE_AT collection
        resumes once the loop has finished what it is doing (the burst's last reports)."""
        if in_flight < PAUSE_AT:
            self._armed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = loop.call_soon(self.end)

    def end(self) -> None:
        """Resume automatic collection if this paused it (the burst is recorded, the
        pause ran out, or the scheduler stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            gc.enable()
