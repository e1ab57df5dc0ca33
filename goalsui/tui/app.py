"""The goalsui console: a Textual app with the scheduler in its own loop; ``make_app``
builds it, ``run_console`` runs it for ``goalsui``/``goalsui demo``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import events, work

from goalsui.domain.timeutil import utcnow
from goalsui.errors import GoalsuiError
from goalsui.tui.base import ConsoleBase
from goalsui.tui.feed import DashboardFeed
from goalsui.tui.messages import (
    DashboardShown,
    DisplayFrozen,
    MainMounted,
    RefreshWanted,
    ShowGoal,
    Tick,
)
from goalsui.tui.model import Dashboard
from goalsui.tui.notices import ConsoleNotice, NoticeAdded
from goalsui.tui.runtime import ConsoleRuntime
from goalsui.tui.screens.main import MainScreen
from goalsui.tui.signals import go_dark
from goalsui.tui.startup import Startup
from goalsui.tui.widgets.timeline import TimelineTable

if TYPE_CHECKING:
    from goalsui.service import Service
    from goalsui.tui.app_ref import ConsoleHost
    from goalsui.tui.reader import RecordsReader

TICK_S = 1.0
#: While the console hosts the scheduler, ``q`` quits only when pressed again within this.
QUIT_AGAIN_S = 3.0
OPENING = "the console is still loading its records; try again in a moment"


class PendingService:
    """Stands in for the service while it opens: every call (``service.intents.pause(1)``)
    says so (a one-line error)."""

    def __getattr__(self, name: str) -> PendingService:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GoalsuiError(OPENING)


class GoalsApp(ConsoleBase):
    """The operator console. ``hooks=(host, port)`` also listens for event hooks; without
    a service, ``opener()`` opens it after a first frame of the KB at ``kb_root``."""

    def __init__(
        self,
        service: Service | None,
        *,
        scheduler: bool = True,
        read_only: bool = False,
        theme: str | None = None,
        clock: Callable[[], datetime] | None = None,
        watch: bool = True,
        sync_on_start: bool = False,
        hooks: tuple[str, int] | None = None,
        opener: Callable[[], Service] | None = None,
        kb_root: Path | str | None = None,
        ui_settings: dict[str, Any] | None = None,
        preview: Dashboard | None = None,
        force_scheduler: bool = False,
        reader: RecordsReader | None = None,
    ) -> None:
        super().__init__(theme=theme, ui_settings=ui_settings)
        if service is None and (opener is None or kb_root is None):
            raise ValueError("GoalsApp needs a service, or an opener and the KB root")
        self.service: Service = (
            service if service is not None else cast("Service", PendingService())
        )
        #: False until the service is open (``opener`` mode): the panes show a preview.
        self.service_ready = service is not None
        self.kb_root = Path(kb_root) if kb_root is not None else service.kb.root  # type: ignore[union-attr]  # no kb_root: a service (checked above)
        self.read_only = read_only
        self.clock: Callable[[], datetime] = clock or utcnow
        self.frozen = False
        self.feed = DashboardFeed(self, on_failed=lambda: self.startup.read_failed())
        self.runtime = ConsoleRuntime(
            self,
            self.feed,
            scheduler=scheduler,
            force_scheduler=force_scheduler,
            watch=watch,
            sync_on_start=sync_on_start,
            hooks=hooks,
        )
        self.startup = Startup(
            self,
            self.feed,
            self.runtime,
            opener=opener,
            kb_root=self.kb_root,
            preview=preview,
            reader=reader,
        )
        self._stopping = False
        self._quit_armed_at = -QUIT_AGAIN_S  # monotonic time of the first ``q``
        #: Called with (tab, text) after the detail pane shows new content (benchmarks, tests).
        self.detail_listeners: list[Callable[[Any, str], None]] = []
        self.choose_theme()

    async def ready_service(self) -> Service:
        return await self.startup.ensure_service()

    async def on_event(self, event: events.Event) -> None:
        """A console that was only reading opens its service on the first key or click;
        keys wait for it (see ``Startup.hold``)."""
        if isinstance(event, events.Key) and self._hold(event):
            return
        if isinstance(event, events.MouseDown):
            self.startup.wake()
        await super().on_event(event)

    def _hold(self, key: events.Key) -> bool:
        """While reading, ``key`` waits for the service, unless it quits (``q``, ``ctrl+q``
        or the keymap's): quitting needs none."""
        if key.is_forwarded:
            return False
        active = self.active_bindings.get(key.key)
        if active is not None and active.binding.action in ("quit", "app.quit"):
            return False
        return self.startup.hold(key)

    @property
    def kb_readable(self) -> bool:
        """The KB's files may be read (``kb_tree``): once the service is open or the first
        records are on screen (a read before them would slow them down)."""
        return self.service_ready or self.startup.records_at is not None

    @property
    def dashboard(self) -> Dashboard | None:
        """The newest dashboard read (the KB preview until the records come)."""
        return self.feed.dashboard

    # -- life cycle ------------------------------------------------------------------------------
    def get_default_screen(self) -> MainScreen:
        return MainScreen(read_only=self.read_only)

    @property
    def main(self) -> MainScreen:
        return self.screen_stack[0]  # type: ignore[return-value]  # the bottom screen is MainScreen

    @property
    def alive(self) -> bool:
        return super().alive and isinstance(self.screen_stack[0], MainScreen)

    def on_mount(self) -> None:
        if not self.is_headless:  # SIGHUP (terminal closed) and SIGTERM quit cleanly
            from goalsui.tui.signals import trap_stop_signals

            loop = asyncio.get_running_loop()
            self.runtime.cleanups.append(trap_stop_signals(loop, self._on_stop_signal))
        self.setup_looks()
        # one timer for both (the poll's interval is the tick's): the look at the database
        # comes first, so the age the tick shows is steady instead of flipping with phases
        self.set_interval(TICK_S, self._poll_and_tick)
        self.startup.app_mounted()

    def on_refresh_wanted(self, message: RefreshWanted) -> None:
        self.feed.schedule(message.delay)

    def on_main_mounted(self, message: MainMounted) -> None:
        self.startup.main_mounted()

    async def on_unmount(self) -> None:
        await self.runtime.close()

    def on_dashboard_shown(self, message: DashboardShown) -> None:
        self.startup.dashboard_shown(records=not message.preview)

    # -- once a second ------------------------------------------------------------------------------
    def _poll_and_tick(self) -> None:
        self.feed.poll()
        if not self.frozen and self.dashboard is not None and self.alive:
            self.main.post_message(Tick(self.clock()))

    def on_timeline_table_zoomed(self, message: TimelineTable.Zoomed) -> None:
        self.feed.replan(message.span)

    def action_refresh_now(self) -> None:
        self.feed.refresh_now()
        self.notify("Refreshing")

    def action_freeze(self) -> None:
        self.frozen = not self.frozen
        if self.frozen:
            self.notify("Display frozen (the scheduler keeps running). Z to unfreeze.")
        self.main.post_message(DisplayFrozen(self.frozen))
        if not self.frozen:
            self.feed.schedule(0)

    # -- notices ------------------------------------------------------------------------------------
    def notice_changed(self, notice: ConsoleNotice) -> None:
        """Every screen's notice line shows the newest notice (once the main screen is
        mounted: its mount shows the newest, too)."""
        if self.alive:  # the main screen and the ones over it
            self.broadcast(lambda: NoticeAdded(notice))

    def action_jump_notice(self) -> None:
        """Open the thread or goal of the last notification."""
        notice = self.runtime.last_notice
        target = notice.target if notice is not None else None
        if target is None:
            self.notify("No notification to go to")
            return
        kind, _, ident = target.partition(":")
        self.switch_to_main()
        if kind == "thread":
            from goalsui.tui.screens.records import ThreadsScreen

            self.push_screen(ThreadsScreen(read_only=self.read_only, select=int(ident)))
        else:
            self.main.post_message(ShowGoal(ident))

    # -- actions (through the service, off the UI thread) and screens ---------------------------------
    def act(self, done: str, call: Callable[..., Any], *args: Any) -> None:
        """Run a service call in a worker; toast the result; refresh at once."""
        if self.read_only:
            self.notify("Read-only console", severity="warning")
            return
        self._act(done, call, args)

    @work(name="Action", group="actions", exit_on_error=False)
    async def _act(self, done: str, call: Callable[..., Any], args: tuple[Any, ...]) -> None:
        await asyncio.to_thread(call, *args)  # a failure is reported by WorkerFailures
        self.notify(done)
        self.feed.schedule(0)

    def run_main_action(self, action: str) -> None:
        """Run a palette command on the main screen (or the app for ``app.*``)."""
        if action.startswith("app."):
            self.call_later(self.run_action, action)
            return
        if self.screen is not self.main:
            self.switch_to_main()
        self.call_later(self.main.run_action, action)

    def switch_to_main(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_open_screen(self, name: str) -> None:
        if not self.service_ready:
            self.notify(OPENING)
            return
        from goalsui.tui.screens.base import DataScreen
        from goalsui.tui.screens.failures import FailuresScreen
        from goalsui.tui.screens.records import EventsScreen, JournalScreen, ThreadsScreen
        from goalsui.tui.screens.reports import ReportsScreen
        from goalsui.tui.screens.runs import RunsScreen

        screens: dict[str, type[DataScreen[Any]]] = {
            "failures": FailuresScreen,
            "reports": ReportsScreen,
            "events": EventsScreen,
            "threads": ThreadsScreen,
            "journal": JournalScreen,
            "runs": RunsScreen,
        }
        self.switch_to_main()
        self.push_screen(screens[name](read_only=self.read_only))

    def open_output(self, run_id: int, title: str = "") -> None:
        from goalsui.tui.screens.output import OutputScreen

        self.push_screen(OutputScreen(run_id, title))

    def copy_id(self, value: str) -> None:
        self.copy_to_clipboard(value)
        self.notify(f"Copied {value}")

    def detail_shown(self, tab: Any, text: str) -> None:
        for listener in self.detail_listeners:
            self.call_after_refresh(listener, tab, text)

    # -- quitting -----------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Quit; while this console hosts the scheduler, only after a second press
        (within ``QUIT_AGAIN_S``), or a confirmation when runs are live."""
        live = self.runtime.live_runs()
        if not live and self.runtime.scheduler is not None:
            now = time.monotonic()
            if now - self._quit_armed_at > QUIT_AGAIN_S:
                self._quit_armed_at = now
                self.notify(
                    "This console runs the scheduler: press q again to quit and stop it "
                    f"(within {QUIT_AGAIN_S:.0f} s)",
                    severity="warning",
                )
                return
        if live:
            from goalsui.tui.screens.modals import ConfirmScreen

            ConfirmScreen.ask(
                self,
                f"{live} run{'s are' if live != 1 else ' is'} live. Quit anyway?",
                "The scheduler stops them (SIGTERM, then SIGKILL after a grace period) "
                "and records them as interrupted.",
                lambda: self.run_worker(self._quit_now(), group="quit"),
                yes="Quit",
                no="Stay",
            )
            return
        await self._quit_now()

    def _on_stop_signal(self, signum: int) -> None:
        """SIGTERM quits as ``q`` does; SIGHUP (the terminal closed): see :meth:`hang_up`."""
        if signum == signal.SIGHUP:
            go_dark(self._driver)  # at once: nothing more may wait on the dead terminal
            self.run_worker(self.hang_up(), group="quit")
        else:
            self.run_worker(self._quit_now(), group="quit")

    async def hang_up(self) -> None:
        """The terminal is gone: stop and record the runs, then end the process (Textual's
        shutdown would wait to restore a terminal that cannot be written any more)."""
        go_dark(self._driver)
        self._stopping = True
        await self.runtime.stop(hooks=True)
        if self.service_ready:
            with contextlib.suppress(Exception):
                self.service.close()
        os._exit(0)

    async def _quit_now(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        await self.runtime.stop()
        self.exit(0)


if TYPE_CHECKING:

    def _is_a_host(app: GoalsApp) -> ConsoleHost:
        return app  # mypy checks that the app gives the screens what they ask for


def _bench_marks(app: GoalsApp, marker: str) -> None:
    """``goalsui bench console``: write the first-paint, records and serving times (with
    the peak RSS at each; at serving, once the first plan is read too, so the figure is the
    console as it runs), then exit (or stay, with ``GOALSUI_BENCH_STAY=1``, for the idle
    measurement)."""
    import json

    from goalsui.tui.rss import peak_rss_kb

    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[f"{name}_t"] = time.time()
        marks[f"{name}_rss_kb"] = peak_rss_kb()

    def serving() -> None:
        mark("serving")
        marks["collecting"] = gc.isenabled()  # the collector is back on (a test checks)
        if app.feed.plans_read == 0:
            app.set_timer(0.02, serving)  # the time and RSS once the plan is in too
            return
        Path(marker).write_text(json.dumps(marks), encoding="utf-8")
        if os.environ.get("GOALSUI_BENCH_STAY") != "1":
            app.exit(0)

    app.startup.first_paint_listeners.append(lambda: mark("paint"))
    app.startup.records_listeners.append(lambda: mark("records"))
    app.startup.serving_listeners.append(serving)


#: Build the console (the CLI, snapshot tests and benchmarks all use this name).
make_app = GoalsApp


def run_console(
    args: Any,
    opener: Callable[[], Service],
    kb_root: Path,
    preview: Callable[[], Dashboard] | None = None,
    reader: RecordsReader | None = None,
) -> int:
    """Run the console; returns the exit code. The first frame comes before ``opener()``
    has opened the service (an error opening it is raised here); ``preview()`` returns the
    KB preview if the caller read it already."""
    # Before the UI loop runs (so not on it): the first frame shows them at once.
    from goalsui.kb.ui_settings import read_ui_settings
    from goalsui.tui.preview import preview_dashboard

    app = make_app(
        None,
        scheduler=not args.no_scheduler,
        force_scheduler=args.force_scheduler,
        read_only=args.read_only,
        theme=args.theme,
        sync_on_start=getattr(args, "console_sync", False),  # set by 'goalsui console'
        hooks=(args.hooks_host, args.hooks_port) if args.hooks_port else None,
        opener=opener,
        kb_root=kb_root,
        ui_settings=read_ui_settings(kb_root),
        preview=preview() if preview is not None else preview_dashboard(kb_root, utcnow()),
        reader=reader,
    )
    marker = os.environ.get("GOALSUI_BENCH_FIRST_PAINT")
    if marker:  # goalsui bench console: record first paint and records, then exit
        _bench_marks(app, marker)
    # Starting allocates tens of thousands of objects that live as long as the process
    # (modules, classes, styles, widgets) and almost no garbage, yet the collector walked
    # them over and over: a fifth of the time to the first frame. The imported ones are
    # frozen out of every later collection, and collection waits for the first frame.
    gc.freeze()
    gc.disable()
    app.startup.first_paint_listeners.append(gc.enable)
    try:
        result = app.run()
    finally:
        gc.enable()
        if app.service_ready:
            app.service.close()
    if app.startup.open_error is not None:
        raise app.startup.open_error
    return int(result or 0)
