"""The goalsui console: a Textual app with the scheduler in its own loop.

``make_app(service, ...)`` builds it (the CLI, tests and benchmarks use it);
``run_console(service, args)`` runs it for ``goalsui``/``goalsui demo``.

Start-up: given an ``opener`` instead of a service, the console paints its first frame
from a quick read of the KB folders (:mod:`goalsui.tui.preview`, marked "loading"), then
opens the service (and with it the database stack, which costs more to import than
Textual) in a worker, and replaces the preview with the records as soon as they load.

The UI never blocks: database and KB reads run in worker threads and come back as
messages; a poll of ``service.change_token()`` every second shows other processes'
changes, in-process changes (service and scheduler events) and KB watcher batches
refresh at once, coalesced into one reload per burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App, SuspendNotSupported
from textual.binding import BindingType
from textual.worker import get_current_worker

from goalsui.domain.timeutil import utcnow
from goalsui.domain.untrusted import escape_markup, plain
from goalsui.errors import GoalsuiError
from goalsui.tui import keys
from goalsui.tui.commands import GoalsCommands
from goalsui.tui.fmt import Palette
from goalsui.tui.messages import DeliverMixin, deliver
from goalsui.tui.model import Dashboard, PlanView, load_dashboard, load_plan
from goalsui.tui.notices import ConsoleNotice, NoticeMixin
from goalsui.tui.screens.main import MainScreen
from goalsui.tui.themes import DEFAULT_THEME, FALLBACK, load_themes, user_theme_files

if TYPE_CHECKING:
    from goalsui.service import Problem, Service

POLL_S = 1.0
TICK_S = 1.0
COALESCE_S = 0.03
PLAN_EVERY_S = 30.0
PLAN_DEBOUNCE_S = 1.0
STOP_GRACE_S = 20.0
OPENING = "the console is still loading its records; try again in a moment"


class PendingService:
    """Stands in for the service while it opens: every call says so (a one-line error)."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def not_yet(*args: Any, **kwargs: Any) -> Any:
            raise GoalsuiError(OPENING)

        return not_yet


class GoalsApp(NoticeMixin, DeliverMixin, App[int]):
    """The operator console."""

    CSS_PATH = "styles/app.tcss"
    TITLE = "goalsui"
    BINDINGS: ClassVar[list[BindingType]] = [*keys.APP]
    COMMANDS = App.COMMANDS | {GoalsCommands}
    NOTIFICATION_TIMEOUT = 5

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
    ) -> None:
        super().__init__()
        self.init_notices()
        if service is None and (opener is None or kb_root is None):
            raise ValueError("GoalsApp needs a service, or an opener and the KB root")
        self.hooks = hooks
        self.hooks_listener: Any = None
        self.service: Any = service if service is not None else PendingService()
        #: False until the service is open (``opener`` mode): the panes show a preview.
        self.service_ready = service is not None
        self._opener = opener
        self.kb_root = Path(kb_root) if kb_root is not None else service.kb_root  # type: ignore[union-attr]  # no kb_root: a service (checked above)
        self._given_settings = ui_settings
        self._preview = preview
        #: Why the service could not be opened (the CLI reports it after the app ends).
        self.open_error: Exception | None = None
        self.want_scheduler = scheduler
        #: start a scheduler even when a daemon serves the KB (``--scheduler``)
        self.force_scheduler = force_scheduler
        self.read_only = read_only
        self.want_theme = theme
        self.clock: Callable[[], datetime] = clock or utcnow
        self.want_watch = watch
        self.sync_on_start = sync_on_start
        self.palette = Palette()
        self.frozen = False
        self.scheduler: Any = None
        self._scheduler_note = "off (watching)" if not scheduler else "starting"
        self._failed_burst: list[Any] = []
        self._after_paint: list[Callable[[], Any]] = []
        self.watcher: Any = None
        self.dashboard: Dashboard | None = None
        self.plan = PlanView()
        self._themes: list[str] = []
        self._token_seen: tuple[Any, ...] | None = None
        self._last_checked: datetime | None = None  # app clock: fixed in tests
        self._loading = False
        self._dirty = False
        self._refresh_timer: Any = None
        self._pending: Dashboard | None = None
        self._plan_inputs: Any = None
        self._plan_at = 0.0
        self._plan_timer: Any = None
        self._unsubscribe: list[Callable[[], Any]] = []
        self._known_problems: set[tuple[str, int | None, str]] = set()
        self._ui_loop: asyncio.AbstractEventLoop | None = None
        self._mounted = self._main_mounted = self._loading_started = False
        self._stopping = False
        self.first_paint_at: float | None = None
        self.records_at: float | None = None
        #: Called with (tab, text) after the detail pane shows new content (benchmarks, tests).
        self.detail_listeners: list[Callable[[Any, str], None]] = []
        #: Called once after the first dashboard is painted (the KB preview in opener mode).
        self.first_paint_listeners: list[Callable[[], None]] = []
        #: Called once after the first dashboard with the records is painted.
        self.records_listeners: list[Callable[[], None]] = []
        self._themes_deferred = False
        self._theme_notes = self._choose_theme()

    # -- life cycle ------------------------------------------------------------------------------
    def get_default_screen(self) -> MainScreen:
        return MainScreen(read_only=self.read_only)

    @property
    def main(self) -> MainScreen:
        return self.get_default_screen_instance()

    def get_default_screen_instance(self) -> MainScreen:
        return self.screen_stack[0]  # type: ignore[return-value]  # the bottom screen is MainScreen

    @property
    def alive(self) -> bool:
        """False once the app is closing: late worker results and ticks are dropped.

        ``is_running`` turns False when shutdown starts, before the screens are taken
        apart (``run_test`` shuts down without ``exit()``; timers fire meanwhile).
        """
        return (
            bool(self.screen_stack)
            and self.is_running
            and not self._exit
            and isinstance(self.screen_stack[0], MainScreen)
        )

    def on_mount(self) -> None:
        self._ui_loop = asyncio.get_running_loop()
        if not self.is_headless:  # SIGHUP (terminal closed) and SIGTERM quit cleanly
            from goalsui.tui.signals import trap_stop_signals

            self._unsubscribe.append(trap_stop_signals(self._ui_loop, self._on_stop_signal))
        self._setup_themes()
        self._setup_keymap()
        # one timer for both (POLL_S == TICK_S): the look at the database comes first, so
        # the age the tick shows is steady instead of flipping with two timers' phases
        self.set_interval(TICK_S, self._poll_and_tick)
        if self.service_ready:
            self._use_service()
        self._mounted = True
        self._start_loading()

    def main_mounted(self) -> None:
        """The main screen has its panes (it mounts after the app): data may come."""
        self._main_mounted = True
        self._start_loading()

    def _start_loading(self) -> None:
        if not (self._mounted and self._main_mounted) or self._loading_started:
            return
        self._loading_started = True
        if self.service_ready:
            self.request_refresh(0)
        elif self._preview is not None:  # read before the app started: in the first frame
            self._apply_preview(self._preview)
        else:
            self.load_preview()

    def _use_service(self) -> None:
        """The service is open: listen to it and line up what starts after the records."""
        self._unsubscribe.append(self.service.subscribe(self._on_service_change))
        # Paint first; what competes for the CPU (setting up the KB watch, re-reading the
        # KB, the scheduler, the plan) starts once the first records are on screen. The
        # watch starts before the re-read, so no edit falls between the two.
        if self.want_watch:
            self._after_paint.append(self._start_watch)
        if self.sync_on_start:
            self._scheduler_note = (
                "waiting for the KB read" if self.want_scheduler else self._scheduler_note
            )
            self._after_paint.append(self.initial_sync)
        elif self.want_scheduler:
            self._after_paint.append(self._start_scheduler)
        if self.hooks is not None:
            self.run_worker(self._start_hooks(), group="hooks", exit_on_error=False)

    # -- start-up in opener mode ------------------------------------------------------------------
    @work(thread=True, group="startup", exit_on_error=False)
    def load_preview(self) -> None:
        """The goal tree from a quick read of the KB folders, for the first frame."""
        from goalsui.tui.preview import preview_dashboard

        try:
            dash: Dashboard | None = preview_dashboard(self.kb_root, self.clock())
        except Exception:  # noqa: BLE001 - the preview is optional: the panes say "loading"
            dash = None
        deliver(self, self._apply_preview, dash)

    def _apply_preview(self, dash: Dashboard | None) -> None:
        if not self.alive or self.first_paint_at is not None or self.dashboard is not None:
            return  # the records came first
        if dash is not None:
            self.dashboard = dash
            self.main.apply(dash)
        self.call_after_refresh(self._first_paint)

    @work(thread=True, group="startup", exit_on_error=False)
    def open_service(self) -> None:
        """Open the service (database stack, schema check) off the UI thread."""
        assert self._opener is not None
        try:
            service = self._opener()
        except Exception as exc:  # noqa: BLE001 - reported by the CLI after the app ends
            deliver(self, self._open_failed, exc)
            return
        deliver(self, self._service_opened, service)

    def _open_failed(self, exc: Exception) -> None:
        self.open_error = exc
        self.exit(1, return_code=1)

    def _service_opened(self, service: Service) -> None:
        if self._exit or self.service_ready:
            service.close()
            return
        self.service = service
        self.service_ready = True
        self._use_service()
        self._schedule_refresh(0)
        if self.alive:
            self.main.load_detail()

    async def on_unmount(self) -> None:
        if self.hooks_listener is not None:
            with contextlib.suppress(Exception):
                await self.hooks_listener.close()
        await self._stop_scheduler()
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                unsubscribe()

    # -- themes and keys ---------------------------------------------------------------------------
    def _choose_theme(self) -> list[tuple[str, dict[str, Any]]]:
        """Register the theme files and set the wanted theme; the toasts to show at mount.

        Before the app runs, so the stylesheet is built once with the theme's colours.
        """
        notes: list[tuple[str, dict[str, Any]]] = []
        settings = self._ui_settings()
        wanted = self.want_theme or settings.get("theme") or DEFAULT_THEME
        if not self.service_ready and wanted == DEFAULT_THEME and not user_theme_files():
            # The default theme is built in: the files (and YAML) wait for the first frame.
            self.register_theme(FALLBACK)
            self._themes = [DEFAULT_THEME]
            self._themes_deferred = True
            self.theme = DEFAULT_THEME
            self.stylesheet.set_variables(self.get_css_variables())
            return notes
        notes.extend(self._register_themes(load_themes()))
        if not isinstance(wanted, str) or wanted not in self.available_themes:
            notes.append(
                (f"No theme named {wanted!r}; using {DEFAULT_THEME}", {"severity": "warning"})
            )
            wanted = DEFAULT_THEME
        self.theme = wanted
        self.stylesheet.set_variables(self.get_css_variables())
        return notes

    @work(thread=True, group="startup", exit_on_error=False)
    def load_theme_files(self) -> None:
        """The theme files, after the first frame (the default theme was built in)."""
        deliver(self, self._themes_loaded, load_themes())

    def _themes_loaded(self, loaded: Any) -> None:
        for message, options in self._register_themes(loaded):
            self.notify(message, **options)

    def _register_themes(self, loaded: Any) -> list[tuple[str, dict[str, Any]]]:
        """Register loaded theme files; the toast to show for the files skipped, if any."""
        for theme in loaded.themes:
            self.register_theme(theme)
        self._themes = loaded.names
        if not loaded.problems:
            return []
        options = {"title": "Theme files skipped", "severity": "warning", "timeout": 12}
        return [("\n".join(loaded.problems), options)]

    def _setup_themes(self) -> None:
        for message, options in self._theme_notes:
            self.notify(message, **options)
        self.palette = Palette.from_theme(self.current_theme)
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _ui_settings(self) -> dict[str, Any]:
        if not self.service_ready:
            return dict(self._given_settings or {})
        try:
            settings: dict[str, Any] = self.service.ui_settings()
            return settings
        except Exception:  # noqa: BLE001 - settings are optional
            return {}

    def _setup_keymap(self) -> None:
        keymap, problems = keys.clean_keymap(self._ui_settings().get("keymap"))
        problems += keys.keymap_conflicts(keymap)
        if problems:
            self.notify(
                "\n".join(problems), title="goalsui.yaml keymap", severity="warning", timeout=10
            )
        if keymap:
            self.set_keymap(keymap)

    def handle_bindings_clash(self, clashed_bindings: set[Any], node: Any) -> None:
        names = ", ".join(sorted(f"{b.id or b.action} ({b.key})" for b in clashed_bindings))
        self.notify(f"Keymap: these keys were taken over: {names}", severity="warning", timeout=8)

    def theme_names(self) -> list[str]:
        return list(self._themes)

    def set_theme(self, name: str) -> None:
        self.theme = name

    def _theme_changed(self, theme: Any) -> None:
        self.palette = Palette.from_theme(theme)
        if self.dashboard is not None and not self.frozen and self.alive:
            self.main.apply(self.dashboard)

    def action_next_theme(self) -> None:
        names = self._themes or [DEFAULT_THEME]
        index = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(index + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)

    # -- refresh -----------------------------------------------------------------------------------------
    def _on_service_change(self, what: str) -> None:
        """Service listener: any thread. Schedules one coalesced reload."""
        self.request_refresh()

    def request_refresh(self, delay: float = COALESCE_S) -> None:
        """Thread-safe: reload the dashboard soon (bursts become one reload)."""
        loop = self._ui_loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._schedule_refresh(delay)
        else:
            deliver(self, self._schedule_refresh, delay)

    def _schedule_refresh(self, delay: float = COALESCE_S) -> None:
        if self._refresh_timer is None:
            self._refresh_timer = self.set_timer(max(delay, 0.001), self._refresh_due)

    def _refresh_due(self) -> None:
        self._refresh_timer = None
        if self._loading:
            self._dirty = True
            return
        self._loading = True
        self.load_dashboard()

    @work(thread=True, group="dashboard", exit_on_error=False)
    def load_dashboard(self) -> None:
        try:
            dash = load_dashboard(self.service, self.clock())
        except Exception as exc:  # noqa: BLE001 - shown as a toast, never a crash
            deliver(self, self._load_failed, exc)
            return
        deliver(self, self._apply_dashboard, dash)

    def _load_failed(self, exc: Exception) -> None:
        self._loading = False
        self.notify(
            f"Refresh failed: {' '.join(str(exc).split())[:200]}", severity="error", timeout=8
        )
        if self.first_paint_at is None:
            self._first_paint()
        elif self.records_at is None:
            self._records_painted()

    def _apply_dashboard(self, dash: Dashboard) -> None:
        self._loading = False
        if not self.alive:
            return
        self._token_seen = dash.token
        self._last_checked = self.clock()
        self.dashboard = dash
        if self.frozen:
            self._pending = dash
        else:
            self.main.apply(dash)
            if self.first_paint_at is None:
                self.call_after_refresh(self._first_paint)
            elif self.records_at is None:
                self.call_after_refresh(self._records_painted)
        if self.records_at is not None:
            self._maybe_plan(dash)
        for screen in self.screen_stack[1:]:
            data_changed = getattr(screen, "data_changed", None)
            if data_changed is not None:
                data_changed()
        if self._dirty:
            self._dirty = False
            self._schedule_refresh()

    def _first_paint(self) -> None:
        if self.first_paint_at is not None:
            return
        self.first_paint_at = time.monotonic()
        for listener in self.first_paint_listeners:
            listener()
        if self._exit:  # a listener ended the app (benchmarks): start nothing more
            return
        self.main.mount_filter_bar()
        if self._themes_deferred:
            self.load_theme_files()
        if not self.service_ready:
            self.open_service()
            return
        self._records_painted()

    def _records_painted(self) -> None:
        """The first records are on screen: start the watch, the re-read, the scheduler."""
        if self.records_at is not None or self._exit:
            return
        self.records_at = time.monotonic()
        for listener in self.records_listeners:
            listener()
        after, self._after_paint = self._after_paint, []
        if self._exit:  # a listener ended the app (benchmarks): start nothing more
            return
        for start in after:
            start()
        if self.dashboard is not None and not self.dashboard.preview:
            self._maybe_plan(self.dashboard)
        errors = [g for g in self.dashboard.goals if g.error] if self.dashboard else []
        if errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more goals)" if len(errors) > 1 else ""
            self.notify(
                f"{first.error}{more}\nThe last good version keeps running.",
                title="KB error",
                severity="error",
                timeout=12,
            )

    def poll_token(self) -> None:
        """Once a second: has anyone (another process included) changed the records?

        A SQLite file and its WAL that have not changed since the last look (two
        ``stat`` calls) mean nothing changed: no query, no worker, at most every
        ``TOKEN_EVERY_S`` the records' fingerprint is read anyway.
        """
        if not self.service_ready:
            return
        from goalsui.tui.idle import StampGate

        gate = self.__dict__.get("_stamp_gate")
        if gate is None:
            gate = self._stamp_gate = StampGate()
        if gate.unchanged(self.service.change_stamp):
            self._last_checked = self.clock()
            return
        self._read_token()

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def _read_token(self) -> None:
        try:
            token = self.service.change_token()
        except Exception:  # noqa: BLE001 - a busy database: try again next second
            return
        deliver(self, self._token_polled, token)

    def _token_polled(self, token: tuple[Any, ...]) -> None:
        if token != self._token_seen:
            self._schedule_refresh(0)
        else:
            self._last_checked = self.clock()

    def refresh_age(self) -> float | None:
        if self._last_checked is None:
            return None
        return max(0.0, (self.clock() - self._last_checked).total_seconds())

    def action_refresh_now(self) -> None:
        self._plan_at = 0.0
        self._schedule_refresh(0)
        self.notify("Refreshing", timeout=1)

    def _poll_and_tick(self) -> None:
        self.poll_token()
        self._tick()

    def _tick(self) -> None:
        if self.frozen or self.dashboard is None or not self.alive:
            return
        from goalsui.tui.idle import next_visible_change

        now, dash = self.clock(), self.dashboard
        quiet = self.__dict__.get("_quiet_until")
        if quiet is not None and quiet[0] is dash and now < quiet[1]:
            self.main.update_status()  # no countdown changes its text yet: no pane work
            return
        self.main.tick(now)
        goals = self.main.goals
        every_second = bool(dash.running) or any(
            node.is_expanded for key, node in goals.child_nodes.items() if key.startswith("worker/")
        )
        # only active schedules show a countdown (a paused one says "paused")
        runs = [i.next_run_at for i in dash.intents.values() if i.status == "active"]
        runs += [w.next_run_at for g in dash.goals for w in g.workers if w.status == "active"]
        self._quiet_until = (dash, next_visible_change(runs, now, every_second=every_second))

    # -- plan ----------------------------------------------------------------------------------------------
    def _maybe_plan(self, dash: Dashboard) -> None:
        """Re-plan when what decides the plan changes (not on every fire), else twice a minute.

        The first plan runs at once; later ones wait for a quiet second, so a burst of
        operator actions or runs costs one plan (it is the heaviest read of the console).
        """
        inputs = (
            tuple(
                sorted(
                    (i.id, i.status, i.kind, i.schedule, i.timezone) for i in dash.intents.values()
                )
            ),
            len(dash.running),
        )
        now = time.monotonic()
        if inputs == self._plan_inputs and now - self._plan_at <= PLAN_EVERY_S:
            return
        first = self._plan_inputs is None
        self._plan_inputs = inputs
        self._plan_at = now
        if self._plan_timer is not None:
            self._plan_timer.stop()
            self._plan_timer = None
        if first:
            self.load_plan(self.main.timeline.span)
        else:
            self._plan_timer = self.set_timer(PLAN_DEBOUNCE_S, self._plan_due)

    def replan(self) -> None:
        """Plan again at once (the timeline's window changed)."""
        self._plan_inputs = None
        if self.dashboard is not None and self.records_at is not None:
            self._maybe_plan(self.dashboard)

    def _plan_due(self) -> None:
        self._plan_timer = None
        if self.alive:
            self.load_plan(self.main.timeline.span)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def load_plan(self, span: timedelta = timedelta(hours=24)) -> None:
        now = self.clock()
        try:
            plan = load_plan(self.service, now, now + span)
        except Exception as exc:  # noqa: BLE001 - the timeline keeps its last plan
            plan = PlanView(warnings=[f"plan failed: {exc}"], source="error")
        if not get_current_worker().is_cancelled:
            deliver(self, self._apply_plan, plan)

    def _apply_plan(self, plan: PlanView) -> None:
        self.plan = plan
        if not self.alive:
            return
        if not self.frozen:
            self.main.apply_plan(plan)

    # -- initial sync and scheduler ------------------------------------------------------------------------------
    @work(thread=True, group="sync", exit_on_error=False)
    def initial_sync(self) -> None:
        """Re-read the KB behind the first paint (from the last index), then start."""
        try:
            problems = self.service.refresh_kb()
        except Exception as exc:  # noqa: BLE001
            deliver(self, self.notify, f"KB sync failed: {exc}", severity="error", timeout=10)
            problems = []
        deliver(self, self._after_initial_sync, problems)

    def _after_initial_sync(self, problems: list[Problem]) -> None:
        if not self.alive:
            return
        self._report_problems(problems, initial=True)
        self.request_refresh(0)
        if self.want_scheduler:
            self._start_scheduler()

    def _start_scheduler(self) -> None:
        self.run_worker(self._scheduler_start(), group="scheduler", exit_on_error=False)

    async def _scheduler_start(self) -> None:
        if not self.force_scheduler:
            from goalsui.tui.scheduler_guard import serving_note

            serving = await asyncio.to_thread(serving_note, self.service)
            if serving is not None:  # one scheduler per KB: watch the daemon's work
                self._scheduler_note = f"{serving} (watching)"
                self.request_refresh(0)
                return
        try:
            from goalsui.scheduler.loop import Scheduler
        except ModuleNotFoundError as exc:
            if exc.name not in ("goalsui.scheduler", "goalsui.scheduler.loop"):
                raise
            self._scheduler_note = "not available"
            return
        except Exception as exc:  # noqa: BLE001 - a broken install: say so, keep watching
            self._scheduler_note = f"error: {' '.join(str(exc).split())[:60]}"
            self.notify(f"The scheduler cannot be loaded: {exc}", severity="error", timeout=15)
            return
        scheduler = Scheduler(self.service)
        self._unsubscribe.append(scheduler.subscribe(self._on_scheduler_event))
        self._attach_notices(scheduler)
        self.scheduler = scheduler
        try:
            await scheduler.start()
        except Exception as exc:  # noqa: BLE001 - the console keeps watching
            self.scheduler = None
            self._scheduler_note = f"error: {' '.join(str(exc).split())[:60]}"
            self.notify(f"The scheduler did not start: {exc}", severity="error", timeout=15)
        self.request_refresh(0)

    async def _start_hooks(self) -> None:
        if self.hooks is None:
            return
        try:
            from goalsui.hooks.server import start_listener
        except ImportError:
            self.notify("Event hooks are not available in this build", severity="warning")
            return
        host, port = self.hooks
        try:
            self.hooks_listener = await start_listener(self.service, host, port)
        except GoalsuiError as exc:
            self.notify(str(exc), title="Event hooks", severity="error", timeout=15)
            return
        self.notify(
            f"Listening for event hooks on {self.hooks_listener.url}/hooks/<source>", timeout=6
        )

    async def _stop_scheduler(self) -> None:
        scheduler = self.scheduler
        if scheduler is None or scheduler.state == "stopped":
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(scheduler.stop(), STOP_GRACE_S)
        self._scheduler_note = "stopped"
        self.scheduler = None

    def notice_changed(self, notice: ConsoleNotice) -> None:
        """The notice line of the main screen shows the newest notice."""
        if self._main_mounted:
            self.main.show_notice(notice)

    def _on_scheduler_event(self, event: Any) -> None:
        """``SchedulerEvent``s (on this loop): refresh now; alerts and failures toast."""
        kind = getattr(event, "kind", "")
        if kind == "error":  # alerts and results toast as notices (see _show_notice)
            self.notify(
                plain(getattr(event, "message", ""), limit=300),
                title="Scheduler",
                severity="warning",
                timeout=8,
            )
        elif kind == "run-finished" and getattr(event, "status", None) in (
            "failed",
            "timeout",
            "interrupted",
        ):
            self._failed_burst.append(event)
            if len(self._failed_burst) == 1:
                self.set_timer(1.0, self._toast_failures)
        self.request_refresh()

    def _attach_notices(self, scheduler: Any) -> None:
        from goalsui.scheduler.notices import Notifier

        self.notifier = Notifier(self.service, self._show_notice)
        self._unsubscribe.append(self.notifier.attach(scheduler))

    def _show_notice(self, notice: Any) -> None:
        """A result or an alert: a toast naming the thread or goal; J jumps there."""
        self.last_notice = notice
        alert = notice.kind == "alert"
        jump = f"\n{keys.JUMP.key_display or keys.JUMP.key}: go there" if notice.target else ""
        self.notify(
            escape_markup(f"{notice.where}: {notice.text}", limit=400) + jump,
            title="Alert" if alert else "Result",
            severity="error" if alert else "information",
            timeout=15 if alert else 8,
        )

    def action_jump_notice(self) -> None:
        """Open the thread or goal of the last notification."""
        notice = getattr(self, "last_notice", None)
        target = notice.target if notice is not None else None
        if target is None:
            self.notify("No notification to go to", timeout=2)
            return
        kind, _, ident = target.partition(":")
        if kind == "thread":
            from goalsui.tui.screens.records import ThreadsScreen

            self.switch_to_main()
            self.push_screen(ThreadsScreen(read_only=self.read_only, select=int(ident)))
        else:
            self.switch_to_main()
            self.main.goals.select_key(f"goal/{ident}")
            self.main.goals.focus()

    def _toast_failures(self) -> None:
        """A burst of failed runs becomes one toast."""
        burst, self._failed_burst = self._failed_burst, []
        if not burst:
            return
        if len(burst) == 1:
            event = burst[0]
            what = plain(getattr(event, "title", "") or f"intent {event.intent_id}", limit=80)
            reason = plain(getattr(event, "message", ""), limit=240)
            self.notify(
                reason or f"{what}: {event.status}",
                title=f"Run {event.status}",
                severity="warning",
                timeout=6,
            )
        else:
            self.notify(
                f"{len(burst)} runs failed; F shows the failures", severity="warning", timeout=6
            )

    def live_runs(self) -> int:
        """Runs started by this console's scheduler that are still going."""
        if self.scheduler is None:
            return 0
        return len(self.scheduler.running)

    @property
    def scheduler_state(self) -> str:
        if self.scheduler is not None:
            return str(self.scheduler.status_text)
        return self._scheduler_note

    # -- KB watcher -------------------------------------------------------------------------------------
    def _start_watch(self) -> None:
        self.run_worker(self._watch_kb(), group="watch", exclusive=True, exit_on_error=False)

    async def _watch_kb(self) -> None:
        from goalsui.kb.watcher import KBWatcher

        self.watcher = KBWatcher(self.service.kb_root)
        async for batch in self.watcher.batches():
            self._kb_batch(batch)

    def watcher_status(self) -> str:
        if not self.want_watch:
            return "off"
        return self.watcher.status if self.watcher is not None else "starting"

    def _kb_batch(self, batch: Any) -> None:
        if not self.alive:
            return
        if batch.config_changed:
            self._setup_keymap()
            self.sync_goals([], config=True)
        if batch.goals_to_sync:
            self.sync_goals(sorted(batch.goals_to_sync))
        if not self.frozen:
            self.main.kb_changed(batch)

    @work(thread=True, group="sync", exit_on_error=False)
    def sync_goals(self, goal_ids: list[str], config: bool = False) -> None:
        try:
            problems = self.service.sync_kb(goal_ids) if goal_ids or config else []
        except Exception as exc:  # noqa: BLE001 - a vanished file mid-sync: try on the next event
            deliver(self, self.notify, f"KB sync failed: {exc}", severity="error", timeout=8)
            return
        deliver(self, self._report_problems, problems, scope=set(goal_ids), config=config)

    def _report_problems(
        self,
        problems: list[Problem],
        *,
        initial: bool = False,
        scope: set[str] | None = None,
        config: bool = False,
    ) -> None:
        """Toast new problems (file, line, reason); forget fixed ones."""
        found = {(p.path, p.line, p.message) for p in problems}
        if scope is not None and not initial:

            def in_scope(key: tuple[str, int | None, str]) -> bool:
                head = key[0].split("/", 1)[0]
                return head in scope or (config and key[0].endswith("goalsui.yaml"))

            stale = {k for k in self._known_problems if in_scope(k)}
            fixed = stale - found
            self._known_problems -= fixed
            if fixed and not found:
                self.notify(
                    "KB files fixed: " + ", ".join(sorted({k[0] for k in fixed})), timeout=4
                )
        new = found - self._known_problems
        self._known_problems |= found
        for path, line, message in sorted(new, key=lambda k: (k[0], k[1] or 0)):
            where = f"{path}:{line}" if line else path
            self.notify(
                f"{where}: {message}\nThe last good version keeps running.",
                title="KB error",
                severity="error",
                timeout=12,
            )
        self.request_refresh(0)

    # -- actions (through the service, off the UI thread) -------------------------------------------------------
    def act(self, done: str, call: Callable[..., Any], *args: Any) -> None:
        """Run a service call in a worker; toast the result; refresh at once."""
        if self.read_only:
            self.notify("Read-only console", severity="warning")
            return
        self._act(done, call, args)

    @work(thread=True, group="actions", exit_on_error=False)
    def _act(self, done: str, call: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            call(*args)
        except GoalsuiError as exc:
            deliver(self, self.notify, str(exc), severity="error", timeout=8)
            return
        except Exception as exc:  # noqa: BLE001 - never a crash for an action
            deliver(self, self.notify, f"{type(exc).__name__}: {exc}", severity="error", timeout=8)
            return
        deliver(self, self.notify, done, timeout=3)
        deliver(self, self._schedule_refresh, 0)

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

    def open_screen(self, name: str) -> None:
        if not self.service_ready:
            self.notify(OPENING, timeout=3)
            return
        from goalsui.tui.screens.failures import FailuresScreen
        from goalsui.tui.screens.records import EventsScreen, JournalScreen, ThreadsScreen
        from goalsui.tui.screens.reports import ReportsScreen

        screens: dict[str, Callable[[], Any]] = {
            "failures": lambda: FailuresScreen(read_only=self.read_only),
            "reports": ReportsScreen,
            "events": EventsScreen,
            "threads": lambda: ThreadsScreen(read_only=self.read_only),
            "journal": JournalScreen,
        }
        self.switch_to_main()
        self.push_screen(screens[name]())

    def open_output(self, run_id: int, title: str = "") -> None:
        from goalsui.tui.screens.output import OutputScreen

        self.push_screen(OutputScreen(run_id, title))

    def copy_id(self, value: str) -> None:
        self.copy_to_clipboard(value)
        self.notify(f"Copied {value}", timeout=2)

    def edit_file(self, goal_id: str, rel: str) -> None:
        """Open a KB file in $VISUAL/$EDITOR; the app suspends and resumes."""
        if self.read_only:
            return
        try:
            path = self.service.kb_path(goal_id, rel)
        except GoalsuiError as exc:
            self.notify(str(exc), severity="error")
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        argv = [*shlex.split(editor), str(path)]
        try:
            with self.suspend():
                code = subprocess.call(argv)
        except SuspendNotSupported:
            if os.environ.get("GOALSUI_EDITOR_NO_SUSPEND") != "1":
                self.notify(
                    f"Cannot open an editor here; edit {path} in a terminal", severity="warning"
                )
                return
            code = subprocess.call(argv, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.notify(f"Cannot run {editor!r}: {exc}", severity="error")
            return
        if code != 0:
            self.notify(f"{editor} exited with {code}", severity="warning")
        self.service.journal("file edited", f"{goal_id}/{rel}", actor="operator")
        if rel.endswith("definition.yaml"):
            self.sync_goals([goal_id])
        self.main.load_detail()
        self.request_refresh(0)

    def action_freeze(self) -> None:
        self.frozen = not self.frozen
        if self.frozen:
            self.notify("Display frozen (the scheduler keeps running). Z to unfreeze.", timeout=4)
            self.main.update_status()
        else:
            pending, self._pending = self._pending, None
            if pending is not None:
                self.main.apply(pending)
            self.main.update_status()
            self._schedule_refresh(0)

    def action_help(self) -> None:
        from goalsui.tui.screens.modals import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen("Keys", help_groups(self)))

    async def action_quit(self) -> None:
        live = self.live_runs()
        if live:
            from goalsui.tui.screens.modals import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.run_worker(self._quit_now(), group="quit")

            self.push_screen(
                ConfirmScreen(
                    f"{live} run{'s are' if live != 1 else ' is'} live. Quit anyway?",
                    "The scheduler stops them (SIGTERM, then SIGKILL after a grace period) "
                    "and records them as interrupted.",
                    yes="Quit",
                    no="Stay",
                ),
                answered,
            )
            return
        await self._quit_now()

    def _on_stop_signal(self, signum: int) -> None:
        """SIGTERM quits as ``q`` does; SIGHUP (the terminal closed): see :meth:`hang_up`."""
        if signum == signal.SIGHUP:
            self._go_dark()  # at once: nothing more may wait on the dead terminal
            self.run_worker(self.hang_up(), group="quit")
        else:
            self.run_worker(self._quit_now(), group="quit")

    def _go_dark(self) -> None:
        """Draw nothing more: the streams go to ``/dev/null``, the driver writes nowhere."""
        from goalsui.tui.signals import detach_terminal

        with contextlib.suppress(OSError):
            detach_terminal()
        driver = self._driver
        if driver is not None:
            setattr(driver, "write", lambda data: None)  # noqa: B010 - mute the dead screen

    async def hang_up(self) -> None:
        """The terminal is gone: stop and record the runs, then end the process.

        Textual's own shutdown is skipped: it waits to restore a terminal that cannot be
        written any more.
        """
        self._go_dark()
        self._stopping = True
        if self.watcher is not None:
            self.watcher.stop()
        if self.hooks_listener is not None:
            with contextlib.suppress(Exception):
                await self.hooks_listener.close()
        await self._stop_scheduler()
        if self.service_ready:
            with contextlib.suppress(Exception):
                self.service.close()
        os._exit(0)

    async def _quit_now(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self.watcher is not None:
            self.watcher.stop()
        await self._stop_scheduler()
        self.exit(0)

    def detail_shown(self, tab: Any, text: str) -> None:
        if self.detail_listeners:
            self.call_after_refresh(self._notify_detail, tab, text)

    def _notify_detail(self, tab: Any, text: str) -> None:
        for listener in self.detail_listeners:
            listener(tab, text)


def help_groups(app: App[Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """This pane / global / navigation, from the bindings active now."""
    pane: list[tuple[str, str]] = []
    global_: list[tuple[str, str]] = []
    nav: list[tuple[str, str]] = []
    screen = app.screen
    rows: dict[tuple[str, str], list[str]] = {}  # (group, description) -> keys
    for _key, active in screen.active_bindings.items():
        binding, node = active.binding, active.node
        if not binding.description or binding.system:
            continue
        if binding.id is None and node in (app, screen):
            continue  # Textual's own screen/app keys (copy text, ...)
        bid = binding.id or ""
        if bid.startswith(("nav.", "pane.")) or binding.action.startswith(
            ("cursor_", "scroll_", "page_", "app.focus")
        ):
            group = "Navigation"
        elif node is app or node is screen:
            group = "Global"
        else:
            group = "This pane"
        keys_for = rows.setdefault((group, binding.description), [])
        shown = app.get_key_display(binding)
        if shown not in keys_for:
            keys_for.append(shown)
    for (group, description), displays in rows.items():
        target = {"This pane": pane, "Global": global_, "Navigation": nav}[group]
        target.append((", ".join(displays), description))
    groups = [("This pane", pane), ("Global", global_), ("Navigation", nav)]
    if isinstance(screen, MainScreen):  # every pane's keys and every symbol, too
        from goalsui.tui.help_keys import legend_section, pane_sections

        groups += [*pane_sections(app), legend_section()]
    return groups


def _bench_marks(app: GoalsApp, marker: str) -> None:
    """``goalsui bench console``: write the first-paint and records times, then exit
    (or stay, with ``GOALSUI_BENCH_STAY=1``, for the idle measurement)."""
    import json

    from goalsui.tui.preview import peak_rss_kb

    marks: dict[str, float] = {}
    stay = os.environ.get("GOALSUI_BENCH_STAY") == "1"

    def mark(name: str) -> None:
        marks[f"{name}_t"] = time.time()
        marks[f"{name}_rss_kb"] = peak_rss_kb()

    def records() -> None:
        mark("records")
        with open(marker, "w", encoding="utf-8") as fh:
            json.dump(marks, fh)
        if not stay:
            app.exit(0)

    app.first_paint_listeners.append(lambda: mark("paint"))
    app.records_listeners.append(records)


def make_app(
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
) -> GoalsApp:
    """Build the console (the CLI, snapshot tests and benchmarks all use this).

    ``hooks=(host, port)`` also listens for signed event hooks in the console's loop.
    Without a service, ``opener()`` opens it in a worker after the first frame, which
    shows the goal tree of the KB at ``kb_root`` (``preview`` if given, else read in a
    worker) and uses ``ui_settings`` (theme, keymap) until the service is open.
    """
    return GoalsApp(
        service,
        scheduler=scheduler,
        force_scheduler=force_scheduler,
        read_only=read_only,
        theme=theme,
        clock=clock,
        watch=watch,
        sync_on_start=sync_on_start,
        hooks=hooks,
        opener=opener,
        kb_root=kb_root,
        ui_settings=ui_settings,
        preview=preview,
    )


def run_console(
    service: Service | None,
    args: Any,
    *,
    opener: Callable[[], Service] | None = None,
    kb_root: Path | str | None = None,
    preview: Callable[[], Dashboard] | None = None,
) -> int:
    """Run the console for ``goalsui`` / ``goalsui demo``; returns the exit code.

    With ``opener`` and ``kb_root`` instead of a service, the first frame comes before
    the service is open; an error opening it ends the console and is raised here.
    ``preview()`` returns the KB preview if the caller started reading it already.
    """
    settings = first = None
    if service is None and kb_root is not None:
        # Before the UI loop runs (so not on it): the first frame shows them at once.
        from goalsui.kb.ui_settings import read_ui_settings
        from goalsui.tui.preview import preview_dashboard

        settings = read_ui_settings(Path(kb_root))
        first = preview() if preview is not None else preview_dashboard(Path(kb_root), utcnow())
    app = make_app(
        service,
        scheduler=not getattr(args, "no_scheduler", False),
        force_scheduler=getattr(args, "force_scheduler", False),
        read_only=getattr(args, "read_only", False),
        theme=getattr(args, "theme", None),
        sync_on_start=getattr(args, "console_sync", False),
        hooks=(getattr(args, "hooks_host", "127.0.0.1"), args.hooks_port)
        if getattr(args, "hooks_port", None)
        else None,
        opener=opener,
        kb_root=kb_root,
        ui_settings=settings,
        preview=first,
    )
    marker = os.environ.get("GOALSUI_BENCH_FIRST_PAINT")
    if marker:  # goalsui bench console: record first paint and records, then exit
        _bench_marks(app, marker)
    try:
        result = app.run()
    finally:
        if app.service_ready:
            app.service.close()
    if app.open_error is not None:
        raise app.open_error
    return int(result or 0)
