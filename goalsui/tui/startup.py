"""The console's start: first paint, then the records, then what competes for the CPU (the
KB watch and re-read, the scheduler, the plan). With an ``opener``, the first frame shows
the KB preview while the service (costlier to import than Textual) opens in a worker; with a
``reader`` too and the KB index current, the console reads its records without the service
until the operator first acts (:mod:`goalsui.tui.reader`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events

from goalsui.errors import GoalsuiError
from goalsui.tui.messages import RecordsOnScreen, ServiceOpened
from goalsui.tui.model import Dashboard

if TYPE_CHECKING:
    from goalsui.service import Service
    from goalsui.tui.base import ConsoleBase
    from goalsui.tui.feed import DashboardFeed
    from goalsui.tui.reader import RecordsReader
    from goalsui.tui.runtime import ConsoleRuntime


class Startup:
    """Paces the start-up steps; tells listeners of the first paint and first records."""

    def __init__(
        self,
        app: ConsoleBase,
        feed: DashboardFeed,
        runtime: ConsoleRuntime,
        *,
        opener: Callable[[], Service] | None,
        kb_root: Path,
        preview: Dashboard | None,
        reader: RecordsReader | None = None,
    ) -> None:
        self.app = app
        self.feed = feed
        self.runtime = runtime
        self._opener = opener
        self._kb_root = kb_root
        self._preview = preview
        self._reader = reader
        #: True while the records are read without the service (opened on the first input)
        self.reading = False
        self._opening: asyncio.Task[None] | None = None
        #: keys pressed while reading: replayed once the service is open
        self._held: list[events.Key] = []
        #: Why the service could not be opened (the CLI reports it after the app ends).
        self.open_error: Exception | None = None
        self.first_paint_at: float | None = None
        self.records_at: float | None = None
        #: Called once after the first dashboard is painted (the KB preview in opener mode).
        self.first_paint_listeners: list[Callable[[], None]] = []
        #: Called once after the first dashboard with the records is painted.
        self.records_listeners: list[Callable[[], None]] = []
        #: Called once when the service is open and its first read is on screen.
        self.serving_listeners: list[Callable[[], None]] = []
        self._app_mounted = self._main_mounted = self._started = False
        #: The service is open and its records are on screen: what waited for them started.
        self.serving = False

    def app_mounted(self) -> None:
        if self.app.service_ready:
            self._use_service()
        self._app_mounted = True
        self._begin()

    def main_mounted(self) -> None:
        """The main screen has its panes (it mounts after the app): data may come."""
        self._main_mounted = True
        self._begin()

    def _begin(self) -> None:
        if not (self._app_mounted and self._main_mounted) or self._started:
            return
        self._started = True
        if self.app.service_ready:
            self.feed.schedule(0)
        elif self._preview is not None:  # read before the app started: in the first frame
            self._apply_preview(self._preview)
        else:
            self.app.in_background(self._read_preview, "startup")

    def _use_service(self) -> None:
        """The service is open: the feed listens to it; the runtime lines up its starts."""
        changes = self.app.service.changes  # a listener on any thread: one coalesced reload
        self.runtime.cleanups.append(changes.subscribe(lambda what: self.feed.request_refresh()))
        self.runtime.service_opened()

    # -- opener mode -------------------------------------------------------------------------
    async def _read_preview(self) -> None:
        """The goal tree from a quick read of the KB folders, in a thread."""
        from goalsui.tui.preview import preview_dashboard

        try:
            dash = await asyncio.to_thread(preview_dashboard, self._kb_root, self.app.clock())
        except Exception:  # noqa: BLE001 - the preview is optional: the panes say "loading"
            dash = None
        self._apply_preview(dash)

    def _apply_preview(self, dash: Dashboard | None) -> None:
        if not self.app.alive or self.first_paint_at is not None or self.feed.dashboard is not None:
            return  # the records came first
        if dash is not None:
            self.feed.show_preview(dash)  # painted: DashboardShown comes back
        else:
            self.app.call_after_refresh(self._painted, False)

    async def ensure_service(self) -> Service:
        """The service, opened first if it is not open yet (once, however often asked)."""
        if not self.app.service_ready:
            if self._opening is None:
                self._opening = asyncio.get_running_loop().create_task(self._open_service())
            await asyncio.shield(self._opening)
        if not self.app.service_ready:
            raise GoalsuiError("the console is ending; its database is not open")
        return self.app.service

    def wake(self) -> None:
        """The operator acted (a key, a click): a reading console opens its service now,
        so the actions and the other screens have it."""
        if self.reading and self._opening is None:
            self.app.in_background(self.ensure_service, "startup")

    def hold(self, key: events.Key) -> bool:
        """While reading, keep ``key`` until the service is open (then it acts as pressed
        then, instead of meeting actions that are not available yet); False: not held."""
        if not self.reading:
            return False
        self._held.append(key)
        self.wake()
        return True

    async def _read_or_open(self) -> None:
        """Read the records without the service if the KB index is current, else open it."""
        assert self._reader is not None
        try:
            current = await asyncio.to_thread(self._reader.index_current)
        except Exception:  # noqa: BLE001 - in doubt, the service re-reads the KB
            current = False
        if not self.app.alive or self.app.service_ready or self._opening is not None:
            return
        if not current:
            await self.ensure_service()
            return
        self.reading = True
        self.feed.reader, self.feed.wake = self._reader, self.wake
        self.feed.schedule(0)  # the records again, with the goals' budget lines
        if self.records_at is not None and not self.serving:
            self._start_after()

    async def _open_service(self) -> None:
        """Open the service (database stack, schema check) in a thread."""
        assert self._opener is not None
        try:
            service = await asyncio.to_thread(self._opener)
        except Exception as exc:  # noqa: BLE001 - reported by the CLI after the app ends
            self.open_error = exc
            self.app.exit(1, return_code=1)
            return
        app = self.app
        if app.ending or app.service_ready:
            service.close()  # the console is ending already
            return
        app.service = service
        app.service_ready = True
        self.reading = False
        self._use_service()
        self.feed.schedule(0)
        if app.alive:
            app.broadcast(ServiceOpened)
        held, self._held = self._held, []
        for key in held:  # in the order they were pressed
            app.post_message(events.Key(key.key, key.character))

    # -- first paint, first records ------------------------------------------------------------
    def dashboard_shown(self, *, records: bool = True) -> None:
        """The main screen painted a dashboard (``records``: not the KB preview): the
        first paint, the first records, and once the service is open, the rest."""
        self.app.call_after_refresh(self._painted, records)

    def read_failed(self) -> None:
        """A read of the records failed: start-up goes on as if they were painted."""
        self._painted(True)

    def _painted(self, records: bool) -> None:
        if self.first_paint_at is None:
            self._first_paint()
        if not records or self.app.ending:  # a listener (benchmarks) may end the app
            return
        if self.records_at is None:
            self.records_at = time.monotonic()
            for listener in self.records_listeners:
                listener()
            if self.app.ending:
                return
            if not self.app.service_ready:
                self.app.broadcast(RecordsOnScreen)
        if (self.app.service_ready or self.reading) and not self.serving:
            self._start_after()

    def _first_paint(self) -> None:
        self.first_paint_at = time.monotonic()
        for listener in self.first_paint_listeners:
            listener()
        if self.app.ending:
            return
        if self.app.themes_deferred:
            self.app.load_theme_files()
        if self.app.service_ready:
            return
        early = self.feed.dashboard is not None and self.feed.dashboard.early
        if self._reader is not None and early:
            self.app.in_background(self._read_or_open, "startup")
        else:
            self.app.in_background(self.ensure_service, "startup")

    def _start_after(self) -> None:
        """Records are on screen and the service is open: start the watch, the re-read,
        the scheduler, the plan."""
        self.serving = True
        for listener in self.serving_listeners:
            listener()
        if self.app.ending:
            return
        reader = self._reader if self.reading else None
        still_indexed = reader.index_current if reader is not None else None
        self.runtime.records_shown(self.feed.dashboard, still_indexed=still_indexed)
        self.feed.start_planning()
