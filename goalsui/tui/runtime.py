"""What the console runs besides its screens: the scheduler, the hooks listener and the KB
watcher, started after the first records are painted; their news reaches the screens
through the feed, as messages or as notices."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from goalsui.domain.states import FAILURE_RUNS, SchedulerState
from goalsui.domain.untrusted import escape_markup, plain
from goalsui.errors import GoalsuiError
from goalsui.tui import keys
from goalsui.tui.messages import WatcherBatch

if TYPE_CHECKING:
    from goalsui.domain.views import Problem
    from goalsui.service import Service
    from goalsui.tui.base import ConsoleBase
    from goalsui.tui.feed import DashboardFeed
    from goalsui.tui.model import Dashboard

STOP_GRACE_S = 20.0
#: how long a reading console waits (in 50 ms steps) for its KB watch before checking again
WATCH_WAIT_STEPS = 100


def serving_note(service: Service) -> str | None:
    """``daemon pid 4242`` when another scheduler process serves this KB (one scheduler per
    KB: the console watches), else None; blocking."""
    try:
        live = service.schedulers.live()
    except OSError:
        return None  # an unreadable state folder: behave as before (start one)
    if not live:
        return None
    more = f" +{len(live) - 1}" if len(live) > 1 else ""
    return f"{live[0].describe()}{more}"


class ConsoleRuntime:
    """Starts, reports on and stops the console's scheduler, hooks listener and watcher."""

    def __init__(
        self,
        app: ConsoleBase,
        feed: DashboardFeed,
        *,
        scheduler: bool,
        force_scheduler: bool,
        watch: bool,
        sync_on_start: bool,
        hooks: tuple[str, int] | None,
    ) -> None:
        self.app = app
        self.feed = feed
        self.want_scheduler = scheduler
        #: start a scheduler even when a daemon serves the KB (``--scheduler``)
        self.force_scheduler = force_scheduler
        self.want_watch = watch
        self.sync_on_start = sync_on_start
        self.hooks = hooks
        self.scheduler: Any = None
        self.hooks_listener: Any = None
        self.watcher: Any = None
        #: the last result or alert (``J`` goes to its thread or goal)
        self.last_notice: Any = None
        self._note = "off (watching)" if not scheduler else "starting"
        self._registration: Any = None  # this console's entry in the state folder
        self._failed_burst: list[Any] = []
        self._known_problems: set[tuple[str, int | None, str]] = set()
        #: undone when the console closes (subscriptions, signal handlers)
        self.cleanups: list[Callable[[], Any]] = []

    def service_opened(self) -> None:
        """Start the hooks listener; the rest waits for the first records (records_shown)."""
        if self.sync_on_start and self.want_scheduler:
            self._note = "waiting for the KB read"
        if self.hooks is not None:
            self.app.in_background(partial(self._start_hooks, *self.hooks), "hooks")

    def records_shown(
        self, dash: Dashboard | None, *, still_indexed: Callable[[], bool] | None = None
    ) -> None:
        """The first records are on screen: one toast for the goals with KB errors; start
        the watch, then the KB re-read (so no edit falls between the two; a console that
        only reads re-reads only if ``still_indexed()`` says no), the scheduler."""
        errors = [g for g in dash.goals if g.error] if dash else []
        if errors:
            more = f" (and {len(errors) - 1} more goals)" if len(errors) > 1 else ""
            self._kb_error(f"{errors[0].error}{more}")
        if self.want_watch:
            self.app.in_background(self._watch_kb, "watch", exclusive=True)
        # the whole KB again behind the first paint, from the last index
        if self.sync_on_start:
            sync = (
                self._initial_sync
                if still_indexed is None
                else partial(self._sync_if_stale, still_indexed)
            )
            self.app.in_background(sync, "sync", name="KB sync")
        elif self.want_scheduler:
            self.start_scheduler()

    # -- the scheduler -----------------------------------------------------------------------
    @property
    def scheduler_state(self) -> str:
        return str(self.scheduler.status_text) if self.scheduler is not None else self._note

    def live_runs(self) -> int:
        """Runs started by this console's scheduler that are still going."""
        return len(self.scheduler.running) if self.scheduler is not None else 0

    def start_scheduler(self) -> None:
        self.app.in_background(self._scheduler_start, "scheduler")

    async def _scheduler_start(self) -> None:
        if not self.force_scheduler:
            serving = await asyncio.to_thread(serving_note, self.app.service)
            if serving is not None:  # one scheduler per KB: watch the daemon's work
                self._note = f"{serving} (watching)"
                self.feed.request_refresh(0)
                return
        from goalsui.scheduler.loop import Scheduler
        from goalsui.scheduler.notices import Notifier

        scheduler = Scheduler(self.app.service)
        self.cleanups.append(scheduler.subscribe(self._on_scheduler_event))
        self.cleanups.append(Notifier(self.app.service, self._show_notice).attach(scheduler))
        self.scheduler = scheduler
        try:
            await scheduler.start()
        except Exception as exc:  # noqa: BLE001 - the console keeps watching
            self.scheduler = None
            self._note = f"error: {' '.join(str(exc).split())[:60]}"
            self.app.notify(f"The scheduler did not start: {exc}", severity="error")
        else:
            await self._register(scheduler.owner)
        self.feed.request_refresh(0)

    async def _register(self, owner: str) -> None:
        """Announce this console's scheduler in the state folder (``run-now --wait`` and
        other consoles look there), when it can be."""
        try:
            self._registration = await asyncio.to_thread(
                self.app.service.schedulers.register, "console", owner
            )
        except Exception:  # noqa: BLE001 - e.g. this process registered already (tests)
            self._registration = None

    async def stop_scheduler(self) -> None:
        registration, self._registration = self._registration, None
        if registration is not None:
            registration.close()
        scheduler = self.scheduler
        if scheduler is None or scheduler.state == SchedulerState.STOPPED:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(scheduler.stop(), STOP_GRACE_S)
        self._note = "stopped"
        self.scheduler = None

    def _on_scheduler_event(self, event: Any) -> None:
        """``SchedulerEvent``s (on this loop): refresh now; alerts and failures toast."""
        kind = getattr(event, "kind", "")
        if kind == "error":  # alerts and results toast as notices (see _show_notice)
            self.app.notify(
                plain(getattr(event, "message", ""), limit=300),
                title="Scheduler",
                severity="warning",
            )
        elif kind == "run-finished" and getattr(event, "status", None) in FAILURE_RUNS:
            self._failed_burst.append(event)
            if len(self._failed_burst) == 1:
                self.app.set_timer(1.0, self._toast_failures)
        self.feed.request_refresh()

    def _toast_failures(self) -> None:
        """A burst of failed runs becomes one toast."""
        burst, self._failed_burst = self._failed_burst, []
        if not burst:
            return
        if len(burst) == 1:
            event = burst[0]
            what = plain(getattr(event, "title", "") or f"intent {event.intent_id}", limit=80)
            reason = plain(getattr(event, "message", ""), limit=240)
            self.app.notify(
                reason or f"{what}: {event.status}",
                title=f"Run {event.status}",
                severity="warning",
            )
        else:
            self.app.notify(f"{len(burst)} runs failed; F shows the failures", severity="warning")

    def _show_notice(self, notice: Any) -> None:
        """A result or an alert: a toast naming the thread or goal; J jumps there."""
        self.last_notice = notice
        alert = notice.kind == "alert"
        jump = f"\n{keys.JUMP.key_display or keys.JUMP.key}: go there" if notice.target else ""
        self.app.notify(
            escape_markup(f"{notice.where}: {notice.text}", limit=400) + jump,
            title="Alert" if alert else "Result",
            severity="error" if alert else "information",
        )

    # -- the hooks listener ------------------------------------------------------------------
    async def _start_hooks(self, host: str, port: int) -> None:
        from goalsui.hooks.server import start_listener

        try:
            self.hooks_listener = await start_listener(self.app.service, host, port)
        except GoalsuiError as exc:
            self.app.notify(str(exc), title="Event hooks", severity="error")
            return
        self.app.notify(f"Listening for event hooks on {self.hooks_listener.url}/hooks/<source>")

    # -- the KB: initial re-read, watcher, syncs ------------------------------------------------
    async def _sync_if_stale(self, still_indexed: Callable[[], bool]) -> None:
        """Reading: once the watch is up, the index is checked again, so that an edit made
        after the first check and before the watch is re-read too."""
        for _ in range(WATCH_WAIT_STEPS):
            if not self.want_watch or (self.watcher is not None and self.watcher.healthy):
                break
            await asyncio.sleep(0.05)
        if not await asyncio.to_thread(still_indexed):
            await self._initial_sync()

    async def _initial_sync(self) -> None:
        """The whole KB into the index; the scheduler starts after it, also if it failed."""
        try:
            service = await self.app.ready_service()  # a reading console opens it now
            problems = await asyncio.to_thread(service.index.refresh)
        finally:
            if self.app.alive and self.want_scheduler:
                self.start_scheduler()
        if self.app.alive:
            self._report_problems(problems)

    async def _watch_kb(self) -> None:
        from goalsui.kb.watcher import KBWatcher

        self.watcher = KBWatcher(self.app.kb_root)
        async for batch in self.watcher.batches():
            if not self.app.alive:
                continue
            if batch.config_changed:
                self.sync_goals([], config=True)  # then the keymap, from the new file
            if batch.goals_to_sync:
                self.sync_goals(sorted(batch.goals_to_sync))
            self.app.broadcast(partial(WatcherBatch, batch))

    def watcher_status(self) -> str:
        if not self.want_watch:
            return "off"
        return self.watcher.status if self.watcher is not None else "starting"

    def sync_goals(self, goal_ids: list[str], config: bool = False) -> None:
        """Index the goals' changed files (a worker); toast new problems, forget fixed ones."""
        if goal_ids or config:  # a failure (a vanished file mid-sync) is the worker's
            self.app.in_background(partial(self._sync, goal_ids, config), "sync", name="KB sync")

    async def _sync(self, goal_ids: list[str], config: bool) -> None:
        service = await self.app.ready_service()  # a reading console opens it now
        problems = await asyncio.to_thread(service.index.sync, goal_ids)
        if config:
            self.app.setup_keymap()
        self._report_problems(problems, scope=set(goal_ids), config=config)

    def _kb_error(self, text: str) -> None:
        self.app.notify(
            f"{text}\nThe last good version keeps running.", title="KB error", severity="error"
        )

    def _report_problems(
        self,
        problems: list[Problem],
        *,
        scope: set[str] | None = None,
        config: bool = False,
    ) -> None:
        """Toast new problems (file, line, reason); forget fixed ones (of ``scope``)."""
        found = {(p.path, p.line, p.message) for p in problems}
        if scope is not None:  # the goals' files (and goalsui.yaml after a config change)
            stale = {
                k
                for k in self._known_problems
                if k[0].split("/", 1)[0] in scope or (config and k[0].endswith("goalsui.yaml"))
            }
            fixed = stale - found
            self._known_problems -= fixed
            if fixed and not found:
                self.app.notify("KB files fixed: " + ", ".join(sorted({k[0] for k in fixed})))
        new = found - self._known_problems
        self._known_problems |= found
        for path, line, message in sorted(new, key=lambda k: (k[0], k[1] or 0)):
            self._kb_error(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        self.feed.request_refresh(0)

    # -- stopping ------------------------------------------------------------------------------
    async def _close_hooks(self) -> None:
        if self.hooks_listener is not None:
            with contextlib.suppress(Exception):
                await self.hooks_listener.close()

    async def stop(self, *, hooks: bool = False) -> None:
        """Quitting: no more KB events; the scheduler stops its runs and records them."""
        if self.watcher is not None:
            self.watcher.stop()
        if hooks:
            await self._close_hooks()
        await self.stop_scheduler()

    async def close(self) -> None:
        """The app unmounts: the listener, the scheduler, every subscription."""
        await self._close_hooks()
        await self.stop_scheduler()
        for unsubscribe in self.cleanups:
            with contextlib.suppress(Exception):
                unsubscribe()
