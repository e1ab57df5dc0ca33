"""The embedded scheduler: an asyncio service inside whatever loop hosts it (see
docs/architecture.md, "The scheduler").

The database is the only truth: due intents are claimed with a compare-and-set through
the injected :class:`~goalsui.store.claims.ClaimBackend`, each claimed occurrence runs
as an isolated turn (:func:`goalsui.runners.turn.run_turn`, or an injected coroutine),
and its outcome is recorded with the rules of :mod:`goalsui.scheduler.rules`.

:class:`Scheduler` wires its parts one way, each built with what it uses: the claimer
(:mod:`~goalsui.scheduler.claim`) hands claimed runs to the launcher
(:mod:`~goalsui.scheduler.turns`), whose turns queue their outcomes
(:mod:`~goalsui.scheduler.outcomes`) for the writer (:mod:`~goalsui.scheduler.writer`);
the alarm (:mod:`~goalsui.scheduler.alarm`) only wakes the claim loop. They run as named
tasks watched by one :class:`~goalsui.scheduler.monitor.Monitor`: a task that dies stops
the scheduler (``failed``, ``error`` says why). A step that fails (a full disk, a
database that does not answer) kills no task: the scheduler stays ``running`` but
``degraded`` and retries with a back-off (:mod:`~goalsui.scheduler.troubles`).

Deterministic use (tests, benchmarks): ``await tick()`` claims and starts everything
due at ``clock()``; ``await drain()`` waits for the started turns to be recorded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from goalsui.domain.states import SchedulerState
from goalsui.runners.tool_access import stop_tool_host
from goalsui.scheduler.alarm import Alarm
from goalsui.scheduler.alerting import Alerter
from goalsui.scheduler.claim import Claimer, claim_loop
from goalsui.scheduler.events import Heartbeat, RunningInfo, SchedulerEvent
from goalsui.scheduler.housekeeping import Housekeeping
from goalsui.scheduler.leases import Leases
from goalsui.scheduler.monitor import Monitor
from goalsui.scheduler.outcomes import Outcomes, Reporter
from goalsui.scheduler.rules import Rules
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.settings import Settings
from goalsui.scheduler.tuning import HEARTBEAT_EVERY, LOOKAHEAD, PRUNE_AFTER, STOP_MARGIN
from goalsui.scheduler.turns import Launcher, TurnFunc
from goalsui.scheduler.waking import CrossProcessWake
from goalsui.scheduler.writer import OutcomeWriter
from goalsui.store.claims import CatchUpPlan, ClaimBackend, RecoveryResult, SqlClaimBackend

if TYPE_CHECKING:
    from goalsui.service import Service


log = logging.getLogger("goalsui.scheduler")

#: the tasks that run between start() and stop(), besides the writer
TIMED_TASKS = ("alarm", "housekeeping", "leases")
MAIN_STOP_WAIT = 30.0  # seconds the claim task gets to finish its step when stopping


def default_owner() -> str:
    """``host:pid:random``: unique per scheduler instance."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


class Scheduler:
    """Claims due intents and runs them; see the module docstring. Subscribers are
    called on the host loop's thread."""

    def __init__(
        self,
        service: Service,
        *,
        owner: str | None = None,
        clock: Callable[[], datetime] | None = None,
        turn: TurnFunc | None = None,
        poll_interval: float = 1.0,
        lease_seconds: float = 30,
        grace_seconds: float = 5,
        max_concurrency: int = 8,
        sweep_interval: float | None = None,
        prune_after: timedelta = PRUNE_AFTER,
        lookahead_seconds: float = LOOKAHEAD,
        backend: ClaimBackend | None = None,
    ) -> None:
        settings = Settings.make(
            poll_interval=poll_interval,
            lease_seconds=lease_seconds,
            grace_seconds=grace_seconds,
            max_concurrency=max_concurrency,
            sweep_interval=sweep_interval,
            prune_after=prune_after,
            lookahead_seconds=lookahead_seconds,
        )
        if backend is None:
            store = service.store
            rules = Rules(service.config, service.files.read)
            backend = SqlClaimBackend(store.engine, rules, store.read_engine)
        rt = self.rt = Runtime(
            service, backend, owner or default_owner(), clock or service.now, settings
        )
        # One way, each part built with what it uses: claimer -> launcher -> outcomes ->
        # writer; the alarm only wakes the claim loop.
        self.alerter = Alerter(rt)
        self.outcomes = Outcomes()
        self.launcher = Launcher(rt, turn, self.outcomes)
        reporter = Reporter(rt, self.launcher.forget, self.alerter)
        self.alarm = Alarm(rt)
        self.claimer = Claimer(rt, self.launcher, self.outcomes, reporter, self.alarm)
        self.writer = OutcomeWriter(rt, self.outcomes, reporter, self.launcher, self.claimer)
        self.housekeeping = Housekeeping(rt, self.alerter)
        self.leases = Leases(rt, self.launcher)
        self.waking = CrossProcessWake(rt)
        self.monitor = Monitor(rt, self.stop)  # a task died: stop, stay ``failed``
        self._unsubscribe: Callable[[], None] | None = None
        self._stopping: asyncio.Task[None] | None = None

    # -- what the host reads ---------------------------------------------------------------------
    @property
    def service(self) -> Service:
        return self.rt.service

    @property
    def owner(self) -> str:
        return self.rt.owner

    @property
    def state(self) -> SchedulerState:
        return self.rt.state

    @property
    def error(self) -> str | None:
        """The last problem: a passing one while ``running``, the fatal one when ``failed``."""
        return self.rt.error

    @property
    def degraded(self) -> str | None:
        """None while every part works; else, in one line, what fails and since when (a
        full disk, a database that does not answer). The scheduler keeps running and
        retries; readiness is 503 meanwhile (see :mod:`goalsui.scheduler.troubles`)."""
        return self.rt.degraded

    @property
    def status_text(self) -> str:
        """The state for people: ``running``, or ``error: ...`` / ``failed: ...``."""
        rt = self.rt
        if rt.state == SchedulerState.FAILED:
            return f"failed: {rt.error}" if rt.error else str(rt.state)
        return f"error: {rt.error}" if rt.error else str(rt.state)

    @property
    def last_tick(self) -> Heartbeat | None:
        """The claim loop's heartbeat: now while it waits for work, else when its current
        step began (a healthy step ends within ``heartbeat_interval`` seconds)."""
        return self.rt.heartbeat()

    @property
    def heartbeat_interval(self) -> float:
        """Seconds a healthy claim step (or poll) takes at most."""
        return max(self.rt.settings.poll_interval, HEARTBEAT_EVERY)

    @property
    def running(self) -> dict[int, RunningInfo]:
        """The turns this scheduler runs now, by run id (a copy)."""
        return dict(self.launcher.info)

    def subscribe(self, callback: Callable[[SchedulerEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every SchedulerEvent; returns an unsubscribe function."""
        subscribers = self.rt.subscribers
        subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in subscribers:
                subscribers.remove(callback)

        return unsubscribe

    def wake(self) -> None:
        """Look at the database now (thread-safe)."""
        self.rt.wake()

    # -- life ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Recover, catch up, then run the timed loop (call inside the running loop)."""
        rt = self.rt
        if rt.started:
            raise RuntimeError("the scheduler is already started")
        self._ensure_runtime()
        rt.started, rt.closing = True, False
        rt.state, rt.error = SchedulerState.STARTING, None
        self.monitor.reset()
        self._unsubscribe = self.service.changes.subscribe(self._on_service_change)
        await self.waking.start()
        try:
            await self.recover()
            await self.catch_up()
        except Exception as exc:  # noqa: BLE001 - the sweep retries; the host keeps running
            rt.fail("start-up recovery failed", exc, part="housekeeping")
        self.alarm.start()
        monitor = self.monitor
        monitor.spawn("claim", claim_loop(self.claimer, lambda: not self.waking.live))
        monitor.spawn("alarm", self.alarm.run())
        monitor.spawn("housekeeping", self.housekeeping.run())
        monitor.spawn("leases", self.leases.run())
        if rt.state == SchedulerState.STARTING:
            rt.state = SchedulerState.RUNNING
        log.info("scheduler %s started", self.owner)

    async def stop(self, grace: float | None = None) -> None:
        """Stop: running turns get ``grace`` seconds (SIGTERM, then SIGKILL) and are recorded."""
        if self._stopping is None or self._stopping.done():
            self._stopping = asyncio.ensure_future(self._stop(grace))
        await self._stopping

    async def _stop(self, grace: float | None) -> None:
        rt = self.rt
        if rt.loop is None:
            if rt.state != SchedulerState.FAILED:
                rt.state = SchedulerState.STOPPED
            return
        failed = rt.state == SchedulerState.FAILED
        grace = rt.settings.grace_seconds if grace is None else float(grace)
        rt.state, rt.closing = SchedulerState.STOPPING, True
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None
        await self.waking.stop()
        self.alarm.shutdown()
        # The claim task ends by itself after its current step (cancelling it in the
        # middle of a database call would lose what that call committed).
        rt.wake()
        await self.monitor.stop(["claim"], timeout=MAIN_STOP_WAIT)
        await self.launcher.stop_all(grace, STOP_MARGIN)
        await self.monitor.stop(list(TIMED_TASKS), timeout=0.5)
        if not await self.writer.flush():
            log.error(
                "scheduler %s: %d run outcome(s) could not be recorded before stopping; "
                "the next scheduler's recovery closes those runs",
                self.owner,
                len(self.outcomes.pending),
            )
        self.launcher.gc_pause.end()
        await stop_tool_host(self.service)  # the turns' tool listener
        await self.monitor.cancel_all()
        if rt.side_tasks:
            await asyncio.wait(list(rt.side_tasks), timeout=grace + STOP_MARGIN)
        rt.close()
        rt.started = False
        self.launcher.starting = 0  # a turn cancelled before its first step never counted down
        rt.state = (
            SchedulerState.FAILED
            if failed or rt.state == SchedulerState.FAILED
            else SchedulerState.STOPPED
        )
        log.info("scheduler %s stopped", self.owner)

    def _ensure_runtime(self) -> None:
        """Bind to the running loop (once): the database thread and the writer task."""
        rt = self.rt
        if not rt.open():
            return
        self.writer.open()
        self.outcomes.open()
        self.claimer.open()
        self.launcher.busy = asyncio.Event()
        self.monitor.spawn("writer", self.writer.run())
        if not rt.started:
            rt.closing = False

    def _on_service_change(self, what: str) -> None:
        if self.rt.on_db_thread():
            return  # our own notification
        self.rt.wake()

    # -- deterministic steps (tests, the demo, benchmarks) -------------------------------------------
    async def tick(self) -> list[int]:
        """Claim and start everything due at ``clock()`` (up to the free slots); returns
        the ids of the runs started (skipped runs are recorded, not returned)."""
        self._ensure_runtime()
        return await self.claimer.tick()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until every started turn ended and its outcome is recorded."""
        deadline = None if timeout is None else time.monotonic() + timeout
        launcher, rt = self.launcher, self.rt
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            waiting: list[asyncio.Future[Any]] = [*launcher.tasks.values(), *rt.side_tasks]
            if waiting:
                done, _ = await asyncio.wait(waiting, timeout=left)
                if not done and left == 0.0:
                    raise TimeoutError("turns still running")
            # also waits for a write in progress (it may start alerts)
            if not await self.writer.flush():
                # the database cannot be written now: wait for the writer's retry
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("run outcomes not recorded yet")
                pause = self.writer.retry_in()
                await asyncio.sleep(pause if left is None else min(pause, left))
                continue
            if not (launcher.tasks or rt.side_tasks or self.outcomes.pending):
                return

    async def recover(self) -> RecoveryResult:
        """Recover rows left ``firing`` by a dead process (their run: ``interrupted``)."""
        self._ensure_runtime()
        return await self.housekeeping.recover()

    async def catch_up(self) -> list[tuple[dict[str, Any], CatchUpPlan]]:
        """The catch-up rule for occurrences missed while no scheduler ran."""
        self._ensure_runtime()
        return await self.housekeeping.catch_up()

    async def sweep(self) -> None:
        """Housekeeping: recover expired leases, end expired intents."""
        self._ensure_runtime()
        await self.housekeeping.sweep()

    async def prune(self) -> int:
        """Delete runs older than ``prune_after`` (and their log files); returns how many."""
        self._ensure_runtime()
        return await self.housekeeping.prune()
