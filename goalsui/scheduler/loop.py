"""The embedded scheduler: an asyncio service inside whatever loop hosts it.

The database is the only truth. The loop claims due intents with a compare-and-set
(:mod:`goalsui.store.claims`), runs each claimed occurrence as an isolated turn
(:func:`goalsui.runners.turn.run_turn`, or an injected coroutine), and records the
outcome with the rules of :mod:`goalsui.scheduler.rules`.

Waking: in-process changes (``service.subscribe``) wake the loop at once; an
APScheduler ``AsyncIOScheduler`` date job at the soonest ``next_run_at`` is the alarm
clock (30 s cap when idle, 0.5 s floor while something is overdue); a cheap poll of
``min(next_run_at)`` every ``poll_interval`` sees other processes' changes. APScheduler
also runs the housekeeping: the lease sweep (recovery, expiry) and the pruning of old
runs. All database work runs on one private worker thread, never on the event loop.

Slots (``max_concurrency``) count turns running or claimed ahead, not outcomes waiting
to be written. A burst of due rows is claimed first, the next claim step pipelined with
the start of the current batch's turns, and the outcomes are recorded after it (at most
``PENDING_MAX_AGE`` late): starting due turns on time comes before bookkeeping. The price:
a process killed in that window leaves those runs ``running``; recovery closes them as
``interrupted`` and retries them, as it does for runs killed while they ran.

Claiming ahead: rows due within ``lookahead`` are claimed before their due time, and
each turn starts at its due time on a loop timer. Many rows due together (a burst that
the free slots can take) are claimed earlier still, ``CLAIM_AHEAD_PER_ROW`` a row (at
most ``MAX_AHEAD``), so that the claims are done when the burst falls due.

Deterministic use (tests, benchmarks): ``await tick()`` claims and starts everything
due at ``clock()``; ``await drain()`` waits for the started turns to be recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goalsui.domain.durations import format_duration
from goalsui.domain.models import Event, Intent, IntentRun
from goalsui.domain.states import FAILURE_RUNS, IntentKind, IntentStatus, RunStatus
from goalsui.errors import FatalError
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler import rules
from goalsui.scheduler.events import RunningInfo, SchedulerEvent
from goalsui.scheduler.records import build
from goalsui.store import claims
from goalsui.store.claims import ClaimedRun, ClaimResult, Completion, CompletionResult

if TYPE_CHECKING:
    from goalsui.service import Service

__all__ = ["Scheduler", "TurnFunc"]

log = logging.getLogger("goalsui.scheduler")

#: ``async def turn(service, intent, run, *, event, cancel) -> TurnOutcome``.
TurnFunc = Callable[..., Awaitable[TurnOutcome]]

IDLE_CAP = 30.0  # seconds: the longest sleep when nothing is due
OVERDUE_FLOOR = 0.5  # seconds: the shortest sleep while something overdue stays unclaimed
LOOKAHEAD = 0.25  # seconds: claim this far ahead, then start each turn on time on a loop timer
#: A burst (rows due within LOOKAHEAD of the soonest) that the free slots can take is
#: claimed this many seconds ahead per row, so that its claims are done when it is due:
#: a claim and a start cost 60-75 us a row on a 2-core VM (bench scheduler, #4).
CLAIM_AHEAD_PER_ROW = 100e-6
MAX_AHEAD = 2.0  # seconds: the furthest a burst is claimed ahead (and at most lease / 4)
SWEEP_EVERY = 10.0  # seconds: lease sweep / recovery / expiry
PRUNE_EVERY = 3600.0  # seconds
PRUNE_AFTER = timedelta(days=30)
CATCH_UP_GRACE = timedelta(seconds=5)  # overdue less than this at start is just "due"
WRITE_BATCH_DELAY = 0.005  # seconds: outcomes ending within this share one transaction
#: seconds: in the timed loop, outcomes wait this long for a claim step to take them (one
#: transaction for both) before the writer records them; a full scheduler wakes a step at once.
WRITE_FALLBACK_DELAY = 0.05
#: outcomes per transaction when the writer records a backlog
WRITE_CHUNK = 1000
LAUNCH_CHUNK = 32  # runs started between two yields to the loop (timers of due turns run)
STOP_MARGIN = 2.0  # seconds a stopping turn gets beyond the grace before it is cancelled
#: A burst of claims records the waiting outcomes in its next step once this many wait,
#: or once the oldest has waited this long (seconds): bookkeeping lags, but boundedly.
PENDING_LIMIT = 20_000
PENDING_MAX_AGE = 2.0
#: The first step of a tick records the outcomes waiting, unless due rows were left
#: unclaimed at the last look (a burst) and more than this many wait: a burst's backlog
#: would hold up its claims.
FOLD_FIRST_MAX = 100
_VALID_OUTCOMES = {
    RunStatus.OK,
    RunStatus.SILENT,
    RunStatus.FAILED,
    RunStatus.TIMEOUT,
    RunStatus.CANCELLED,
    RunStatus.SKIPPED,  # a turn that decided not to run (e.g. a nightshift worker with no task)
}


def default_owner() -> str:
    """``host:pid:random``: unique per scheduler instance."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


async def _default_turn(
    service: Service, intent: Intent, run: IntentRun, **kwargs: Any
) -> TurnOutcome:
    from goalsui.runners.turn import run_turn

    return await run_turn(service, intent, run, **kwargs)


class Scheduler:
    """Claims due intents and runs them; see the module docstring.

    ``state``: ``starting`` / ``running`` / ``stopping`` / ``stopped`` / ``error: ...``.
    ``running``: ``{run_id: RunningInfo}`` of the turns this instance runs now.
    ``subscribe(callback)``: ``callback(SchedulerEvent)`` on the host loop's thread.
    """

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
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if lease_seconds <= 0 or poll_interval <= 0:
            raise ValueError("lease_seconds and poll_interval must be positive")
        self.service = service
        self.owner = owner or default_owner()
        self.clock = clock or service.now
        self.poll_interval = min(float(poll_interval), 1.0)
        self.lease_seconds = float(lease_seconds)
        self.grace_seconds = float(grace_seconds)
        self.max_concurrency = int(max_concurrency)
        self.sweep_interval = sweep_interval or min(SWEEP_EVERY, max(self.lease_seconds / 2, 0.2))
        self.prune_after = prune_after
        self.lookahead = timedelta(seconds=max(0.0, min(float(lookahead_seconds), 1.0)))
        #: the furthest a burst is claimed ahead (no further than the lookahead if it is 0)
        self.max_ahead = max(
            self.lookahead,
            timedelta(seconds=min(MAX_AHEAD, self.lease_seconds / 4) if self.lookahead else 0),
        )
        self._ahead = self.lookahead  # how far ahead the next claim looks
        self._turn: TurnFunc = turn or _default_turn
        self._turn_takes_grace = turn is None or _accepts(turn, "grace")
        self.state = "stopped"
        self._subscribers: list[Callable[[SchedulerEvent], None]] = []
        self._info: dict[int, RunningInfo] = {}
        self._cancels: dict[int, asyncio.Event] = {}
        self._tasks: dict[int, asyncio.Task] = {}
        self._starting = 0  # turns launched, due now, whose turn has not been called yet
        self._gates: dict[datetime, asyncio.Future] = {}  # turns claimed ahead, by due time
        self._pending: list[Completion] = []  # outcomes waiting to be recorded
        self._oldest_pending = 0.0  # time.monotonic() when the oldest of them ended
        self._write_lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._db_thread: int | None = None
        self._wake: asyncio.Event | None = None
        self._writer_wake: asyncio.Event | None = None
        self._backlog: asyncio.Event | None = None  # more than FOLD_FIRST_MAX outcomes wait
        self._tick_lock: asyncio.Lock | None = None
        self._background: list[asyncio.Task] = []
        self._writer_task: asyncio.Task | None = None
        self._aps: Any = None
        self._alarm_at: float | None = None  # loop.time() of the armed alarm
        self._known_soonest: datetime | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._unlisten: Callable[[], None] | None = None
        self._closing = False
        self._started = False
        self._alerts: Any = None
        self._side_tasks: set[asyncio.Task] = set()

    # -- public API ----------------------------------------------------------------------------
    @property
    def running(self) -> dict[int, RunningInfo]:
        """The turns this scheduler runs now, by run id (a copy)."""
        return dict(self._info)

    def subscribe(self, callback: Callable[[SchedulerEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every SchedulerEvent; returns an unsubscribe function."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def wake(self) -> None:
        """Look at the database now (thread-safe)."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return
        try:
            if _on_loop_thread(loop):
                wake.set()
            else:
                loop.call_soon_threadsafe(wake.set)
        except RuntimeError:  # the loop is closing
            pass

    async def start(self) -> None:
        """Recover, catch up, then run the timed loop (call inside the running loop)."""
        if self._started:
            raise RuntimeError("the scheduler is already started")
        self._ensure_runtime()
        self._started = True
        self._closing = False
        self.state = "starting"
        self._unsubscribe = self.service.subscribe(self._on_service_change)
        listen = getattr(self.service, "listen_changes", None)
        if listen is not None:
            # PostgreSQL: other processes' changes arrive by NOTIFY at once (SQLite: no-op;
            # the poll sees them). The callback runs in the listener's thread.
            try:
                self._unlisten = await asyncio.to_thread(
                    listen, lambda _what: self.wake(), wait=2.0
                )
            except Exception as exc:  # noqa: BLE001 - polling still works
                log.warning("cannot listen for other processes' changes: %s", exc)
        try:
            await self.recover()
            await self.catch_up()
        except Exception as exc:  # noqa: BLE001 - the sweep retries; the host keeps running
            self._fail("start-up recovery failed", exc)
        self._start_apscheduler()
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self._main(), name="goalsui-scheduler"),
            loop.create_task(self._lease_loop(), name="goalsui-scheduler-leases"),
        ]
        if self.state == "starting":
            self.state = "running"
        log.info("scheduler %s started", self.owner)

    async def stop(self, grace: float | None = None) -> None:
        """Stop: running turns get ``grace`` seconds (SIGTERM, then SIGKILL) and are recorded."""
        if self._loop is None:
            self.state = "stopped"
            return
        grace = self.grace_seconds if grace is None else float(grace)
        self.state = "stopping"
        self._closing = True
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unlisten is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._unlisten)
            self._unlisten = None
        if self._aps is not None:
            with contextlib.suppress(Exception):
                self._aps.shutdown(wait=False)
            self._aps = None
        # The main loop ends by itself after its current step (cancelling it in the middle
        # of a database call would lose what that call committed).
        main = [t for t in self._background if t.get_name() == "goalsui-scheduler"]
        self.wake()
        if main:
            _, stuck = await asyncio.wait(main, timeout=30)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*main, return_exceptions=True)
        # Running turns: ask them to stop, give them their grace, then cancel what is left.
        for info in self._info.values():
            info.cancel_reason = info.cancel_reason or "shutdown"
        for event in self._cancels.values():
            event.set()
        for due in list(self._gates):
            self._open_gate(due)  # turns claimed ahead see their cancel now, not when due
        tasks = list(self._tasks.values())
        if tasks:
            _, left = await asyncio.wait(tasks, timeout=grace + STOP_MARGIN)
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left, timeout=STOP_MARGIN + 1)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await self._flush()
        if self._writer_task is not None:
            self._writer_task.cancel()
            await asyncio.gather(self._writer_task, return_exceptions=True)
            self._writer_task = None
        if self._side_tasks:
            await asyncio.wait(list(self._side_tasks), timeout=grace + STOP_MARGIN)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self._loop = None
        self._started = False
        self._starting = 0  # a turn cancelled before its first step never counted down
        self.state = "stopped"
        log.info("scheduler %s stopped", self.owner)

    async def tick(self) -> list[int]:
        """Claim and start everything due at ``clock()`` (up to the free slots).

        Records overlaps of this scheduler's running intents first. Returns the ids of
        the runs started (skipped runs are recorded, not returned).
        """
        self._ensure_runtime()
        assert self._tick_lock is not None
        if self._closing:
            return []
        started: list[int] = []
        last: ClaimResult | None = None
        async with self._tick_lock:
            step, batch, now, due_by = self._start_step(True, 0)
            while step is not None:
                try:
                    result, done = await step
                except BaseException:
                    self._pending[:0] = batch  # not recorded: keep them for the next write
                    raise
                step = None
                self._finished(batch, done, now)
                last, checked, claimed_by = result, now, due_by
                if result.full and not self._closing:
                    # Pipelined: the next claim runs on the database thread while these
                    # turns are started here.
                    step, batch, now, due_by = self._start_step(False, len(result.fired))
                try:
                    started.extend(await self._launch(result))
                except BaseException:
                    if step is not None:  # its rows are claimed: start their turns anyway
                        try:
                            result, done = await asyncio.shield(step)
                        except Exception:  # noqa: BLE001 - nothing of it was kept
                            self._pending[:0] = batch
                        else:
                            self._finished(batch, done, now)
                            with contextlib.suppress(Exception):
                                await self._launch(result)
                    raise
                if step is None:
                    break  # the batch was not full (or we are closing): nothing more due
            if last is not None:
                soonest, burst = self._with_mine(last.soonest), last.burst
            else:
                # No step (slots full): what a claim now would have taken is not ours.
                checked = self.clock()
                claimed_by = checked + self._ahead
                soonest, burst = await self._soonest()
            self._arm(soonest, checked_at=checked, claimed_by=claimed_by, burst=burst)
        if self._pending and self._writer_wake is not None:
            self._writer_wake.set()  # outcomes left by a burst: the writer records them
        return started

    def _start_step(
        self, first: bool, claimed: int
    ) -> tuple[asyncio.Future | None, list[Completion], datetime, datetime]:
        """Submit one claim step to the database thread (``None``: nothing to do); also
        returns the outcomes it records, its ``now`` and the due time it claims up to.

        Slots are this scheduler's turns, running or waiting for their start time, plus
        ``claimed`` (fired by the step in flight, not started yet). A turn that ended
        frees its slot at once; its outcome waits to be recorded. The
        first step of a tick records the outcomes waiting (in a burst: up to
        ``FOLD_FIRST_MAX``); other steps only claim (due turns start first, bookkeeping
        follows), unless ``PENDING_LIMIT`` outcomes wait or the oldest has waited
        ``PENDING_MAX_AGE`` seconds.
        """
        now = self.clock()
        pending = self._pending
        fold = (
            (first and (len(pending) <= FOLD_FIRST_MAX or not self._behind(now)))
            or len(pending) >= PENDING_LIMIT
            or (bool(pending) and time.monotonic() - self._oldest_pending >= PENDING_MAX_AGE)
        )
        batch: list[Completion] = []
        if fold:
            batch, self._pending = self._pending, []
        free = self.max_concurrency - len(self._tasks) - claimed
        check = first and bool(self._info)
        due_by = now + self._ahead
        if free <= 0 and not check and not batch:
            return None, batch, now, due_by
        config = self.service.config()
        future = asyncio.ensure_future(
            self._db(
                partial(
                    claims.step,
                    self.service.store.engine,
                    owner=self.owner,
                    now=now,
                    lease_until=now + timedelta(seconds=self.lease_seconds),
                    limit=max(free, 0),
                    decide=partial(self._decide_claim, now),
                    completions=batch,
                    decide_after=partial(_decide_after, now, config),
                    overlap_next=partial(self._overlap_next, now),
                    check_overlaps=check,
                    due_by=due_by,
                    burst=self._burst_probe(now),
                ),
                notify=True,
            )
        )
        return future, batch, now, due_by

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until every started turn ended and its outcome is recorded."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            waiting = [*self._tasks.values(), *self._side_tasks]
            if waiting:
                done, _ = await asyncio.wait(waiting, timeout=left)
                if not done and left == 0.0:
                    raise TimeoutError("turns still running")
            await self._flush()  # also waits for a write in progress (it may start alerts)
            if not (self._tasks or self._side_tasks or self._pending):
                return

    async def recover(self) -> claims.RecoveryResult:
        """Recover rows left ``firing`` by a dead process (their run: ``interrupted``)."""
        self._ensure_runtime()
        now = self.clock()
        config = self.service.config()
        result = await self._db(
            partial(
                claims.recover_expired,
                self.service.store.engine,
                owner=self.owner,
                now=now,
                decide=lambda row, c: rules.decide_after(row, c, now, config),
            ),
            notify=True,
        )
        for row, run, decision in result.interrupted:
            self._emit(
                SchedulerEvent(
                    "run-finished",
                    row["id"],
                    run.get("id"),
                    RunStatus.INTERRUPTED,
                    f"run {run.get('id')} of '{row['title']}' interrupted: its scheduler stopped",
                    title=row["title"],
                    trigger=run.get("trigger"),
                    at=now,
                )
            )
            self._after_failure(row, run, RunStatus.INTERRUPTED, decision.auto_disabled)
        for orphan in result.orphans:
            self._emit(
                SchedulerEvent(
                    "run-finished",
                    orphan["intent_id"],
                    orphan["id"],
                    orphan["status"],
                    f"run {orphan['id']} closed as {orphan['status']}: its scheduler stopped",
                    at=now,
                )
            )
        return result

    async def catch_up(self) -> list[tuple[dict, claims.CatchUpPlan]]:
        """The catch-up rule for occurrences missed while no scheduler ran."""
        self._ensure_runtime()
        now = self.clock()
        limit = self.service.config().catch_up_limit
        done = await self._db(
            partial(
                claims.catch_up,
                self.service.store.engine,
                now=now,
                overdue_before=now - CATCH_UP_GRACE,
                kinds=(IntentKind.AT, IntentKind.CRON, IntentKind.HEARTBEAT),
                plan=lambda row: rules.plan_catch_up(row, now, limit),
                limit_text=format_duration(limit),
            ),
            notify=True,
        )
        for row, plan in done:
            if plan.missed:
                total = len(plan.missed) + plan.more_missed
                self._emit(
                    SchedulerEvent(
                        "run-finished",
                        row["id"],
                        None,
                        RunStatus.MISSED,
                        f"'{row['title']}': {total} occurrence(s) missed (older than {format_duration(limit)})",
                        title=row["title"],
                        trigger="catch-up",
                        at=now,
                    )
                )
        return done

    async def sweep(self) -> None:
        """Housekeeping: recover expired leases, end expired intents."""
        await self.recover()
        now = self.clock()
        ended = await self._db(
            partial(claims.end_expired, self.service.store.engine, now=now), notify=True
        )
        if ended:
            self.wake()

    async def prune(self) -> int:
        """Delete runs older than ``prune_after`` (and their log files); returns how many."""
        self._ensure_runtime()
        before = self.clock() - self.prune_after
        removed = await self._db(
            partial(claims.prune_runs, self.service.store.engine, before=before)
        )
        if removed:
            await self._db(partial(self._remove_logs, removed))
            await self._db(
                partial(
                    self.service.journal,
                    "runs pruned",
                    "",
                    f"{len(removed)} runs older than {format_duration(self.prune_after)}",
                    actor="scheduler",
                )
            )
        return len(removed)

    # -- runtime plumbing ---------------------------------------------------------------------
    def _ensure_runtime(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix="goalsui-scheduler-db",
            initializer=self._mark_db_thread,
        )
        self._wake = asyncio.Event()
        self._writer_wake = asyncio.Event()
        self._backlog = asyncio.Event()
        self._tick_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._writer_task = self._loop.create_task(self._writer(), name="goalsui-scheduler-writer")
        if not self._started:
            self._closing = False

    def _mark_db_thread(self) -> None:
        self._db_thread = threading.get_ident()

    async def _db(self, fn: Callable[[], Any], *, notify: bool = False) -> Any:
        """Run ``fn`` on the scheduler's database thread (never on the event loop)."""
        assert self._loop is not None and self._executor is not None

        def call() -> Any:
            result = fn()
            if notify and _did_something(result):
                self.service.changed("runs")
            return result

        return await self._loop.run_in_executor(self._executor, call)

    def _on_service_change(self, what: str) -> None:
        if threading.get_ident() == self._db_thread:
            return  # our own notification
        self.wake()

    def _emit(self, event: SchedulerEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - a subscriber never breaks the scheduler
                log.exception("scheduler subscriber failed")

    def _fail(self, what: str, exc: BaseException) -> None:
        if isinstance(exc, FatalError):
            # Going on would do harm (the database file is gone): the host must stop us.
            log.error("%s: %s", what, exc)
            self.state = f"error: {exc}"
            self._emit(SchedulerEvent("fatal", message=str(exc), at=self.clock()))
            return
        message = f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        log.warning("%s", message, exc_info=exc)
        self.state = f"error: {message}"
        self._emit(SchedulerEvent("error", message=message, at=self.clock()))

    def _ok(self) -> None:
        if self.state.startswith("error"):
            self.state = "running" if self._started else "stopped"

    # -- decisions (run on the database thread) ----------------------------------------------------
    def _decide_claim(self, now: datetime, row: dict) -> claims.ClaimDecision:
        # A row claimed a little ahead (lookahead) is decided as of its due time.
        due = row["next_run_at"]
        return rules.decide_claim(row, max(now, due) if due else now, self.service.kb_read)

    def _overlap_next(self, now: datetime, row: dict) -> datetime | None:
        return rules.advance(
            row["kind"], row.get("schedule"), row.get("timezone") or "UTC", row["next_run_at"], now
        )

    async def _soonest(self) -> tuple[datetime | None, int]:
        """The soonest due time (active intents, and the next occurrences of our running
        ones), and the burst due with it (see :meth:`_ahead_for`)."""
        soonest, burst = await self._db(
            partial(
                claims.soonest_burst,
                self.service.store.read_engine,
                self._burst_probe(self.clock()),
            )
        )
        return self._with_mine(soonest), burst

    def _burst_probe(self, now: datetime) -> claims.BurstProbe | None:
        """What a look at the database asks about the burst due with the soonest row:
        nothing if this scheduler never claims further than its lookahead (its slots
        could never hold a burst: 8 rows are not one); else a burst due before the next
        poll could claim it ahead in time."""
        most = timedelta(seconds=self.max_concurrency * CLAIM_AHEAD_PER_ROW)
        if min(most, self.max_ahead) <= self.lookahead:
            return None
        by = now + self.max_ahead + timedelta(seconds=self.poll_interval)
        return claims.BurstProbe(self.lookahead, self.max_concurrency, by)

    def _ahead_for(self, burst: int) -> timedelta:
        """How far ahead the next claim looks: the lookahead, or, for a burst of rows due
        together, long enough for the claims of as many as the free slots take to be done
        when they are due (``CLAIM_AHEAD_PER_ROW`` each, at most ``max_ahead``)."""
        rows = min(burst, self.max_concurrency - len(self._tasks))
        ahead = timedelta(seconds=rows * CLAIM_AHEAD_PER_ROW)
        return min(max(self.lookahead, ahead), self.max_ahead)

    def _with_mine(self, soonest: datetime | None) -> datetime | None:
        mine = [i.next_run_at for i in self._info.values() if i.next_run_at is not None]
        if mine:
            soonest = min([soonest, *mine]) if soonest is not None else min(mine)
        return soonest

    # -- the timed loop -----------------------------------------------------------------------------
    def _start_apscheduler(self) -> None:
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        aps = AsyncIOScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 1},
        )
        aps.start()  # must run inside the host's running loop (FACTS.md)
        aps.add_job(self._job_sweep, "interval", seconds=self.sweep_interval, id="goalsui-sweep")
        aps.add_job(self._job_prune, "interval", seconds=PRUNE_EVERY, id="goalsui-prune")
        aps.add_job(
            self._job_prune,
            "date",
            run_date=datetime.now(UTC) + timedelta(seconds=60),
            id="goalsui-prune-first",
        )
        self._aps = aps

    def _arm(
        self,
        soonest: datetime | None,
        checked_at: datetime | None = None,
        claimed_by: datetime | None = None,
        burst: int = 0,
    ) -> None:
        """Set the alarm at the soonest due time (30 s cap idle, 0.5 s floor when overdue).

        ``checked_at``: when the claim that found ``soonest`` ran (default: now), and
        ``claimed_by`` the due time it claimed up to. Something claimable then and still
        unclaimed (slots full, or another scheduler has it) is overdue: look again after
        the floor. Something that fell due since is claimed at once. The alarm rings the
        claim's look-ahead before the due time (:meth:`_ahead_for`: longer for a
        ``burst``), but after a claim not before half a lookahead has passed: each claim
        takes everything due within its look-ahead, so a stream of intents due a
        millisecond apart costs one claim per half lookahead (each still claimed at least
        that early), not one claim per intent.
        """
        self._known_soonest = soonest
        self._ahead = self._ahead_for(burst)
        if self._aps is None or self._loop is None:
            return
        now = self.clock()
        if soonest is None:
            delay = IDLE_CAP
        elif claimed_by is not None and soonest <= claimed_by:
            delay = OVERDUE_FLOOR  # it was claimable and is still not ours
        else:
            ring = soonest - self._ahead
            if checked_at is not None:
                ring = max(ring, checked_at + self.lookahead / 2)
            delay = min((ring - now).total_seconds(), IDLE_CAP)
            if delay <= 0:
                self._alarm_at = None
                self.wake()
                return
        at = self._loop.time() + delay
        if self._alarm_at is not None and abs(self._alarm_at - at) < 0.0005:
            return
        self._alarm_at = at
        try:
            self._aps.add_job(
                self._job_alarm,
                "date",
                run_date=datetime.now(UTC) + timedelta(seconds=delay),
                id="goalsui-alarm",
                replace_existing=True,
            )
        except Exception as exc:  # noqa: BLE001 - the poll still wakes us
            log.warning("cannot arm the alarm: %s", exc)

    async def _job_alarm(self) -> None:
        self._alarm_at = None
        self.wake()

    async def _job_sweep(self) -> None:
        try:
            await self.sweep()
            self._ok()
        except Exception as exc:  # noqa: BLE001
            self._fail("lease sweep failed", exc)

    async def _job_prune(self) -> None:
        try:
            await self.prune()
        except Exception as exc:  # noqa: BLE001
            self._fail("pruning old runs failed", exc)

    async def _main(self) -> None:
        assert self._wake is not None
        need_tick = True
        next_poll = time.monotonic() + self.poll_interval
        while not self._closing:
            if need_tick:
                need_tick = False
                self._wake.clear()
                try:
                    await self.tick()
                    self._ok()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - keep going; report it
                    self._fail("claiming due intents failed", exc)
                    await asyncio.sleep(self.poll_interval)
            timeout = max(0.0, next_poll - time.monotonic())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
                need_tick = True
                continue
            except TimeoutError:
                pass
            next_poll = time.monotonic() + self.poll_interval
            try:
                need_tick = await self._poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                self._fail("polling the database failed", exc)

    async def _poll(self) -> bool:
        """A cheap look for other processes' changes; True when a tick is needed."""
        soonest, burst = await self._soonest()
        ahead = self._ahead_for(burst)
        if soonest is not None and soonest <= self.clock() + ahead:
            self._ahead = ahead
            return True
        if soonest != self._known_soonest or ahead != self._ahead:
            self._arm(soonest, burst=burst)  # ... or a burst that came closer: ring earlier
        return False

    async def _lease_loop(self) -> None:
        """Renew leases every lease/3; notice cancels and lost leases every poll."""
        renew_every = self.lease_seconds / 3
        next_renew = time.monotonic() + renew_every
        while True:
            await asyncio.sleep(min(self.poll_interval, renew_every))
            try:
                if not self._info:
                    next_renew = time.monotonic() + renew_every
                elif time.monotonic() >= next_renew:
                    next_renew = time.monotonic() + renew_every
                    await self.renew()
                else:
                    await self.watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                self._fail("renewing leases failed", exc)

    async def renew(self) -> None:
        """Extend the leases of our running intents; stop turns cancelled or lost meanwhile."""
        ids = {info.intent_id: run_id for run_id, info in self._info.items()}
        if not ids:
            return
        until = self.clock() + timedelta(seconds=self.lease_seconds)
        statuses = await self._db(
            partial(
                claims.renew_leases,
                self.service.store.engine,
                owner=self.owner,
                intent_ids=list(ids),
                lease_until=until,
            )
        )
        self._check_statuses(ids, statuses)

    async def watch(self) -> None:
        """A cheap read: stop turns whose intent was cancelled; notice passed occurrences.

        Only turns still running are looked at: an ended one waits only to be recorded
        (its completion applies the overlap rule).
        """
        tasks = self._tasks
        ids = {info.intent_id: run_id for run_id, info in self._info.items() if run_id in tasks}
        if not ids:
            return
        rows = await self._db(
            partial(claims.check_running, self.service.store.read_engine, list(ids))
        )
        statuses = {i: r["status"] for i, r in rows.items() if r["lease_owner"] == self.owner}
        now = self.clock()
        for intent_id, row in rows.items():
            info = self._info.get(ids[intent_id])
            if info is not None:
                info.next_run_at = row["next_run_at"]
                if row["next_run_at"] is not None and row["next_run_at"] <= now:
                    self.wake()  # an occurrence passed during the run: record the overlap
        self._check_statuses(ids, statuses)

    def _check_statuses(self, ids: dict[int, int], statuses: dict[int, str]) -> None:
        for intent_id, run_id in ids.items():
            info = self._info.get(run_id)
            if info is None or info.cancel_reason:
                continue
            status = statuses.get(intent_id)
            if status == IntentStatus.FIRING:
                continue
            info.cancel_reason = "cancelled" if status == IntentStatus.CANCELLED else "lost"
            log.info("run %s of intent %s: %s; stopping it", run_id, intent_id, info.cancel_reason)
            cancel = self._cancels.get(run_id)
            if cancel is not None:
                cancel.set()

    # -- turns ------------------------------------------------------------------------------------------
    async def _launch(self, result: ClaimResult) -> list[int]:
        """Report skipped runs and start a task per fired one.

        Every ``LAUNCH_CHUNK`` runs it yields to the loop, so that turns claimed earlier
        and due now start on time instead of waiting behind a whole batch.
        """
        assert self._loop is not None
        started: list[int] = []
        passed = {run["intent_id"] for run in result.overlaps}
        for info in self._info.values():
            if info.intent_id in passed:
                info.next_run_at = None  # advanced in the database; watch() re-reads it
        for run in result.overlaps:
            self._emit(
                SchedulerEvent(
                    "run-finished",
                    run["intent_id"],
                    run["id"],
                    RunStatus.SKIPPED,
                    "skipped: overlap (the previous run still runs)",
                    trigger=run["trigger"],
                    at=run["started_at"],
                )
            )
        for item in result.skipped:
            row, run = item.intent, item.run
            self._emit(
                SchedulerEvent(
                    "run-finished",
                    row["id"],
                    run["id"],
                    RunStatus.SKIPPED,
                    f"'{row['title']}' skipped: {run['reason']}",
                    title=row["title"],
                    trigger=run["trigger"],
                    at=run["started_at"],
                )
            )
        now, loop_now = self.clock(), self._loop.time()
        for k, item in enumerate(result.fired):
            if k and not k % LAUNCH_CHUNK:
                await asyncio.sleep(0)
            row, run = item.intent, item.run
            run_id = run["id"]
            info = RunningInfo(
                run_id=run_id,
                intent_id=row["id"],
                title=row["title"],
                started_at=run["started_at"],
                trigger=run["trigger"],
                planned_at=run["planned_at"],
            )
            info.next_run_at = row["next_run_at"]
            self._info[run_id] = info
            cancel = asyncio.Event()
            self._cancels[run_id] = cancel
            snapshot = (row["kind"], row.get("schedule"), row.get("timezone"))
            start_at = loop_now + (run["started_at"] - now).total_seconds()  # loop clock
            due_now = start_at <= loop_now
            gate = None if due_now else self._gate(run["started_at"], start_at)
            task = self._loop.create_task(
                self._execute(info, item, cancel, snapshot, gate, due_now),
                name=f"goalsui-run-{run_id}",
            )
            self._tasks[run_id] = task
            if due_now:
                self._starting += 1
            started.append(run_id)
        return started

    def _gate(self, due: datetime, start_at: float) -> asyncio.Future:
        """The gate of the turns due at ``due`` (one timer for all of them, at
        ``start_at`` on the loop clock): a burst claimed ahead starts at once when due,
        without a timer per turn (10,000 timers woke ~7 us a turn later each, measured)."""
        gate = self._gates.get(due)
        if gate is None:
            assert self._loop is not None
            gate = self._gates[due] = _StartGate(loop=self._loop)
            self._loop.call_at(start_at, self._open_gate, due)
        return gate

    def _open_gate(self, due: datetime) -> None:
        gate = self._gates.pop(due, None)
        if gate is not None and not gate.done():
            gate.set_result(None)

    async def _execute(
        self,
        info: RunningInfo,
        item: ClaimedRun,
        cancel: asyncio.Event,
        snapshot: tuple,
        gate: asyncio.Future | None = None,
        starting: bool = False,
    ) -> None:
        """Run one turn and queue its outcome. ``gate``: claimed ahead, it starts when that
        opens (its due time). ``starting``: it is counted in ``_starting`` (due now) until
        its turn is called."""
        event_id = item.run.get("event_id")
        try:
            # The turn's records are built in its own task (a record that cannot be built
            # is a failed run), before it waits for its start time.
            intent = build(Intent, item.intent)
            run = build(IntentRun, item.run)
            kwargs: dict[str, Any] = {
                "event": build(Event, item.event) if item.event else None,
                "cancel": cancel,
            }
            if self._turn_takes_grace:
                kwargs["grace"] = self.grace_seconds
            if gate is not None:  # claimed ahead: start on time
                await gate
            if starting:
                starting = False
                self._starting -= 1
            if cancel.is_set():
                outcome = TurnOutcome("cancelled", reason="stopped before it started")
            else:
                self._emit(
                    SchedulerEvent(
                        "run-started",
                        info.intent_id,
                        info.run_id,
                        RunStatus.RUNNING,
                        f"run {info.run_id} of '{info.title}' started ({info.trigger})",
                        title=info.title,
                        trigger=info.trigger,
                        at=info.started_at,
                    )
                )
                outcome = await self._turn(self.service, intent, run, **kwargs)
            if not isinstance(outcome, TurnOutcome):
                outcome = TurnOutcome(
                    "failed", reason=f"internal error: the runner returned {type(outcome).__name__}"
                )
        except asyncio.CancelledError:
            outcome = TurnOutcome("cancelled", reason="stopped: the scheduler shut down")
            info.cancel_reason = info.cancel_reason or "shutdown"
        except Exception as exc:  # noqa: BLE001 - a failing runner is a failed run
            log.exception("run %s: the runner raised", info.run_id)
            outcome = TurnOutcome(
                "failed",
                reason=f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
            )
        if starting:  # it never got as far as its turn
            self._starting -= 1
        if not self._pending:
            self._oldest_pending = time.monotonic()
        self._pending.append(self._completion(info, outcome, snapshot, event_id))
        if len(self._pending) > FOLD_FIRST_MAX:
            assert self._backlog is not None
            self._backlog.set()  # the writer's batch delay ends early
        self._tasks.pop(info.run_id, None)
        assert self._writer_wake is not None
        if (
            self._started
            and not self._closing
            and self._wake is not None
            and len(self._tasks) + 1 >= self.max_concurrency
        ):
            # Due rows may wait for this slot: the next step records the outcome in the
            # same transaction as its claims.
            self._wake.set()
        if not self._starting:
            # ... else the writer does, batched with others ending soon. Not while due
            # turns wait to start: they come first (the last of them to end wakes it).
            self._writer_wake.set()

    def _completion(
        self, info: RunningInfo, outcome: TurnOutcome, snapshot: tuple, event_id: int | None
    ) -> Completion:
        status, reason = outcome.status, outcome.reason
        if status not in _VALID_OUTCOMES:
            status, reason = RunStatus.FAILED, f"internal error: unknown outcome {outcome.status!r}"
        if info.cancel_reason == "shutdown" and status == RunStatus.CANCELLED:
            status, reason = RunStatus.INTERRUPTED, "interrupted: the scheduler stopped (shutdown)"
        elif info.cancel_reason == "lost" and status == RunStatus.CANCELLED:
            status, reason = RunStatus.INTERRUPTED, "interrupted: this scheduler lost its lease"
        elif info.cancel_reason == "cancelled" and status == RunStatus.CANCELLED:
            reason = reason or "the intent was cancelled"
        return Completion(
            run_id=info.run_id,
            intent_id=info.intent_id,
            status=status,
            reason=reason,
            exit_code=outcome.exit_code,
            output_tail=outcome.output_tail,
            output_path=str(outcome.output_path) if outcome.output_path else None,
            snapshot=snapshot,
            event_id=event_id,
            **_outcome_extras(outcome),
        )

    async def _writer(self) -> None:
        """Record finished turns in batches (one transaction per batch).

        Due turns start first: the writer waits while launched turns due now wait to
        start, while a tick runs, and while a burst is behind with slots free. A few
        outcomes wait a batch delay (the next step may take them); more go at once.
        """
        assert self._writer_wake is not None
        while True:
            await self._writer_wake.wait()
            if len(self._pending) <= FOLD_FIRST_MAX:
                # Let outcomes that end together share a commit; in the timed loop the next
                # step usually takes them first. (A backlog goes at once.)
                assert self._backlog is not None
                self._backlog.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._backlog.wait(),
                        WRITE_BATCH_DELAY if not self._started else WRITE_FALLBACK_DELAY,
                    )
            self._writer_wake.clear()
            assert self._write_lock is not None and self._tick_lock is not None
            if self._tick_lock.locked():
                # Claims first: write when the tick is over (rather than waking again for
                # every turn that ends meanwhile).
                async with self._tick_lock:
                    pass
            if self._starting and not self._closing:
                continue  # due turns wait to start: the last of them to end wakes us again
            if self._claim_waits():
                continue  # a burst's claims come first (the tick's end wakes us)
            if not self._started:
                await self._flush()
                continue
            # Timed loop: one transaction per wake; outcomes ending meanwhile set the wake
            # again and go in the next batch (not in a string of tiny transactions).
            async with self._write_lock:
                if self._pending:
                    await self._write_pending()

    def _behind(self, now: datetime) -> bool:
        """Rows were due and left unclaimed when the last step looked (a burst)."""
        return self._known_soonest is not None and self._known_soonest <= now

    def _claim_waits(self) -> bool:
        """A burst is behind and slots are free: its next claim is coming."""
        return (
            self._started
            and not self._closing
            and self._behind(self.clock())
            and len(self._tasks) < self.max_concurrency
        )

    async def _flush(self) -> None:
        """Write every pending outcome (waits for a write in progress)."""
        assert self._write_lock is not None
        async with self._write_lock:
            while self._pending:
                await self._write_pending()

    async def _write_pending(self) -> None:
        """Record the waiting outcomes, ``WRITE_CHUNK`` per transaction.

        Pipelined: the next chunk is written on the database thread while the
        subscribers here hear how the previous one ended.
        """
        batch, self._pending = self._pending, []
        chunks = [batch[k : k + WRITE_CHUNK] for k in range(0, len(batch), WRITE_CHUNK)]
        now = self.clock()
        config = self.service.config()

        def write(chunk: list[Completion]) -> asyncio.Future:
            return asyncio.ensure_future(
                self._db(
                    partial(
                        claims.complete_runs,
                        self.service.store.engine,
                        owner=self.owner,
                        now=now,
                        items=chunk,
                        decide=partial(_decide_after, now, config),
                    ),
                    notify=True,
                )
            )

        future = write(chunks[0]) if chunks else None
        for k, chunk in enumerate(chunks):
            assert future is not None
            try:
                results: list[CompletionResult] = await future
            except Exception as exc:  # noqa: BLE001 - the lease lapses; recovery closes the runs
                self._fail("recording run outcomes failed", exc)
                results = []
            future = write(chunks[k + 1]) if k + 1 < len(chunks) else None
            self._finished(chunk, results, now)
            if self._started:
                self._ring_for(results)

    def _ring_for(self, results: list[CompletionResult]) -> None:
        """A completion recorded by the writer (not by a step) may have planned the
        intent's next fire (retry, next occurrence) before the alarm: ring for it on time."""
        nexts = [
            r.intent["next_run_at"]
            for r in results
            if r.applied
            and r.intent is not None
            and r.intent.get("status") == IntentStatus.ACTIVE
            and r.intent.get("next_run_at") is not None
        ]
        if nexts:
            soonest = self._with_mine(min(nexts))
            known = self._known_soonest
            if soonest is not None and soonest <= self.clock() + self.lookahead:
                self.wake()  # claimable now
            elif soonest is not None and (known is None or soonest < known):
                self._arm(soonest)

    def _finished(
        self, batch: list[Completion], results: list[CompletionResult], now: datetime
    ) -> None:
        """Forget the recorded runs and tell the subscribers how they ended."""
        by_run = {r.completion.run_id: r for r in results}
        for completion in batch:
            info = self._info.pop(completion.run_id, None)
            self._cancels.pop(completion.run_id, None)
            result = by_run.get(completion.run_id)
            if result is not None:
                self._report(info, result, now)

    def _report(self, info: RunningInfo | None, result: CompletionResult, now: datetime) -> None:
        c = result.completion
        title = info.title if info else ""
        status = result.run_status
        detail = f" - {c.reason}" if c.reason else ""
        self._emit(
            SchedulerEvent(
                "run-finished",
                c.intent_id,
                c.run_id,
                status,
                f"run {c.run_id} of '{title}' {status}{detail}",
                title=title,
                trigger=info.trigger if info else None,
                at=now,
            )
        )
        if (
            result.applied
            and result.decision is not None
            and result.decision.failure
            and result.intent
        ):
            run = {
                "id": c.run_id,
                "intent_id": c.intent_id,
                "status": status,
                "reason": c.reason,
                "trigger": info.trigger if info else None,
                "started_at": info.started_at if info else now,
                "finished_at": now,
                "exit_code": c.exit_code,
                "output_tail": c.output_tail,
                "output_path": c.output_path,
                "event_id": c.event_id,
                "owner": self.owner,
            }
            self._after_failure(result.intent, run, status, result.decision.auto_disabled)

    # -- alerts -----------------------------------------------------------------------------------------
    def _after_failure(self, row: dict, run: dict, status: str, auto_disabled: bool) -> None:
        if status not in FAILURE_RUNS and not auto_disabled:
            return
        if self._loop is None:
            return
        task = self._loop.create_task(self._alert(dict(row), dict(run), auto_disabled))
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    async def _alert(self, row: dict, run: dict, auto_disabled: bool) -> None:
        try:
            from goalsui.scheduler import alerts
        except ImportError:
            alerts = None  # type: ignore[assignment]
        try:
            intent = build(Intent, row)
            run_obj = build(IntentRun, run)
            alert = (
                await alerts.maybe_alert(self.service, intent, run_obj, auto_disabled=auto_disabled)
                if alerts
                else None
            )
        except Exception as exc:  # noqa: BLE001 - an alert never breaks the scheduler
            log.warning("alert for intent %s failed: %s", row.get("id"), exc)
            alert = None
        if alert is None and not (alerts is None and auto_disabled):
            return
        message = (
            getattr(alert, "message", None)
            or f"'{row.get('title')}' auto-disabled after repeated failures"
        )
        self._emit(
            SchedulerEvent(
                "alert",
                row.get("id"),
                run.get("id"),
                run.get("status"),
                message,
                title=row.get("title") or "",
                at=self.clock(),
            )
        )

    # -- helpers ------------------------------------------------------------------------------------------
    def _remove_logs(self, removed: list[dict]) -> None:
        runs_dir = self.service.runs_dir
        for row in removed:
            for path in {row.get("output_path"), str(runs_dir / f"{row['id']}.log")}:
                if not path:
                    continue
                p = Path(path)
                try:
                    if p.is_file() and p.resolve().is_relative_to(runs_dir.resolve()):
                        p.unlink()
                except OSError:
                    pass


def _outcome_extras(outcome: TurnOutcome) -> dict[str, Any]:
    """The turn's usage, transcript inputs and kind of failure, as the store records them."""
    usage = outcome.usage
    return {
        "tokens_in": usage.tokens_in if usage else None,
        "tokens_out": usage.tokens_out if usage else None,
        "cost_usd": usage.cost_usd if usage else None,
        "model": usage.model if usage else None,
        "prompt": outcome.prompt,
        "argv": list(outcome.argv) if outcome.argv is not None else None,
        "infrastructure": outcome.infrastructure,
        "skipped": outcome.skipped,
    }


def _decide_after(now: datetime, config: Any, row: dict, c: Completion) -> claims.AfterDecision:
    return rules.decide_after(row, c, now, config)


def _accepts(func: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _did_something(result: Any) -> bool:
    if isinstance(result, ClaimResult):
        return bool(result.fired or result.skipped or result.overlaps or result.ended)
    if isinstance(result, claims.RecoveryResult):
        return bool(result.interrupted or result.orphans)
    return bool(result)


class _StartGate(asyncio.Future):
    """The future that turns claimed ahead for one due time wait on.

    Cancelling a waiting task must not cancel the gate (``Task.cancel`` cancels the
    future its task waits on): the other turns behind it would be cancelled too. The
    cancelled task gets its ``CancelledError`` when the gate opens (at the due time, or at
    once when the scheduler stops).
    """

    def cancel(self, msg: Any = None) -> bool:
        return False
