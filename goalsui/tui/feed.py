"""The dashboard feed: reads the records and the plan in workers and posts them to every
screen, after a service or scheduler event (coalesced), a changed fingerprint in the
once-a-second poll (other processes' changes) or ``ctrl+r``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.timer import Timer

from goalsui.tui.idle import StampGate
from goalsui.tui.messages import DashboardReady, PlanReady, RefreshWanted
from goalsui.tui.model import Dashboard, PlanView, load_dashboard, load_plan
from goalsui.tui.widgets.timeline import DEFAULT_SPAN

if TYPE_CHECKING:
    from goalsui.tui.base import ConsoleBase
    from goalsui.tui.reader import RecordsReader

COALESCE_S = 0.03
PLAN_EVERY_S = 30.0
PLAN_DEBOUNCE_S = 1.0


class DashboardFeed:
    """Loads dashboards and plans off the UI thread and posts them to the screens."""

    def __init__(self, app: ConsoleBase, *, on_failed: Callable[[], None]) -> None:
        self.app = app
        #: called (UI loop) when a read failed: the start-up steps go on regardless
        self._on_failed = on_failed
        self.dashboard: Dashboard | None = None
        #: the timeline's window: the plan covers [now, now + span]
        self.span = DEFAULT_SPAN
        #: plans start once the first records are on screen (see :meth:`start_planning`)
        self.planning = False
        self.loading = False
        self.dirty = False
        self.refresh_timer: Timer | None = None
        self._token_seen: tuple[Any, ...] | None = None
        self._last_checked: datetime | None = None  # app clock: fixed in tests
        self._stamp_gate = StampGate()
        self._plan_inputs: Any = None
        self._plan_at = 0.0
        self._plan_timer: Timer | None = None
        #: plans read so far (the console benchmark waits for the first)
        self.plans_read = 0
        #: while the service is not open: reads without it, and what opens it when they fail
        self.reader: RecordsReader | None = None
        self.wake: Callable[[], None] = lambda: None

    # -- reading the records -----------------------------------------------------------------
    def request_refresh(self, delay: float = COALESCE_S) -> None:
        """Any thread: reload the dashboard soon (bursts become one reload); the app
        schedules it on its loop when the message arrives."""
        self.app.post_message(RefreshWanted(delay))

    def schedule(self, delay: float = COALESCE_S) -> None:
        """On the UI loop: read the records after ``delay`` (once, however often asked)."""
        if self.refresh_timer is None:
            self.refresh_timer = self.app.set_timer(max(delay, 0.001), self._refresh_due)

    def refresh_now(self) -> None:
        """``ctrl+r``: read the records and plan again at once."""
        self._plan_at = 0.0
        self.schedule(0)

    def _refresh_due(self) -> None:
        self.refresh_timer = None
        if self.loading:
            self.dirty = True
            return
        self.loading = True
        self.app.in_background(self._read, "dashboard", name="Refresh")

    async def _read(self) -> None:
        """One dashboard, read in a thread; a failure is reported as the worker's."""
        try:
            dash = await asyncio.to_thread(self._load, self.app.clock())
        except Exception:
            self.loading = False
            self._on_failed()
            raise
        self.loading = False
        if dash is None:  # the reader could not read the file: the service reads next
            self.wake()
            return
        if not self.app.alive:
            return
        self._token_seen = dash.token
        self._last_checked = self.app.clock()
        self.dashboard = dash
        self.app.broadcast(lambda: DashboardReady(dash))
        if self.planning:
            self._maybe_plan(dash)
        if self.dirty:
            self.dirty = False
            self.schedule()

    @property
    def _reading(self) -> RecordsReader | None:
        """The reader while the service is not open, else None (the service reads)."""
        return None if self.app.service_ready else self.reader

    def _load(self, now: datetime) -> Dashboard | None:
        """The service's read once it is open, else the reader's (None: it could not)."""
        reader = self._reading
        return load_dashboard(self.app.service, now) if reader is None else reader.dashboard(now)

    def show_preview(self, dash: Dashboard) -> None:
        """The KB preview (opener mode): shown like records until the records come."""
        self.dashboard = dash
        self.app.broadcast(lambda: DashboardReady(dash))

    # -- the once-a-second look at the records ------------------------------------------------
    def poll(self) -> None:
        """Has anyone (another process included) changed the records? An unchanged SQLite
        file and WAL (two ``stat`` calls) mean no: no query, no worker."""
        if not self.app.service_ready:
            reader = self._reading
            if reader is None:
                return
            if self._stamp_gate.unchanged(reader.stamp):
                self._last_checked = self.app.clock()
            else:  # reading without the service: the records are the fingerprint
                self.schedule(0)
            return
        if self._stamp_gate.unchanged(self.app.service.overview.change_stamp):
            self._last_checked = self.app.clock()
            return
        self.app.in_background(self._read_token, "poll", name="read_token", exclusive=True)

    async def _read_token(self) -> None:
        """The records' fingerprint, read in a thread."""
        try:
            token = await asyncio.to_thread(self.app.service.overview.change_token)
        except Exception:  # noqa: BLE001 - a busy database: try again next second
            return
        if token != self._token_seen:
            self.schedule(0)
        else:
            self._last_checked = self.app.clock()

    def refresh_age(self) -> float | None:
        """Seconds since the records were last known to be current (None: not yet)."""
        last = self._last_checked
        return None if last is None else max(0.0, (self.app.clock() - last).total_seconds())

    # -- the plan -----------------------------------------------------------------------------
    def start_planning(self) -> None:
        """The first records are on screen: plan now, and after each change from now on."""
        self.planning = True
        if self.dashboard is not None and not self.dashboard.preview:
            self._maybe_plan(self.dashboard)

    def replan(self, span: timedelta | None = None) -> None:
        """Plan again at once (the timeline's window changed to ``span``)."""
        if span is not None:
            self.span = span
        self._plan_inputs = None
        if self.dashboard is not None and self.planning:
            self._maybe_plan(self.dashboard)

    def _maybe_plan(self, dash: Dashboard) -> None:
        """Re-plan when what decides the plan changes, else twice a minute; after the first,
        wait for a quiet second (a burst costs one plan, the console's heaviest read)."""
        intents = sorted(
            (i.id, i.status, i.kind, i.schedule, i.timezone) for i in dash.intents.values()
        )
        inputs = (tuple(intents), len(dash.running))
        now = time.monotonic()
        if inputs == self._plan_inputs and now - self._plan_at <= PLAN_EVERY_S:
            return
        first = self._plan_inputs is None
        self._plan_inputs = inputs
        self._plan_at = now
        if self._plan_timer is not None:
            self._plan_timer.stop()
        if first:
            self._plan_due()
        else:
            self._plan_timer = self.app.set_timer(PLAN_DEBOUNCE_S, self._plan_due)

    def _plan_due(self) -> None:
        self._plan_timer = None
        if self.app.alive:
            self.app.in_background(
                partial(self._read_plan, self.span), "plan", name="Plan", exclusive=True
            )

    def _load_plan(self, now: datetime, until: datetime) -> PlanView | None:
        reader = self._reading
        return (
            load_plan(self.app.service, now, until) if reader is None else reader.plan(now, until)
        )

    async def _read_plan(self, span: timedelta) -> None:
        """The plan of the next ``span``, read in a thread (a newer one cancels it)."""
        now = self.app.clock()
        try:
            plan = await asyncio.to_thread(self._load_plan, now, now + span)
        except Exception:  # noqa: BLE001 - a busy database: the timeline keeps its last plan
            return
        if plan is not None and self.app.alive:
            self.plans_read += 1
            self.app.broadcast(lambda: PlanReady(plan))
