"""What every part of a scheduler shares: its settings, its database thread, its wake
signal, its subscribers and its state (see docs/architecture.md, "The scheduler").

All database work runs on one private worker thread (:meth:`Runtime.db`), never on the
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from goalsui.domain.states import SchedulerState
from goalsui.errors import FatalError
from goalsui.scheduler import tuning
from goalsui.scheduler.events import Heartbeat, SchedulerEvent
from goalsui.scheduler.settings import Settings
from goalsui.scheduler.troubles import REPEAT_LOG_EVERY, Trouble, cannot_write
from goalsui.store import claims
from goalsui.store.claims import ClaimBackend, ClaimResult

if TYPE_CHECKING:
    from goalsui.service import Service

log = logging.getLogger("goalsui.scheduler")
T = TypeVar("T")


@dataclass(eq=False)
class Runtime:
    """The shared plumbing of one scheduler's parts."""

    service: Service = field(repr=False)
    backend: ClaimBackend
    owner: str
    clock: Callable[[], datetime]
    settings: Settings
    state: SchedulerState = field(default=SchedulerState.STOPPED, init=False)
    error: str | None = field(default=None, init=False)  # the last problem (FAILED: the fatal one)
    #: the parts whose last step failed, by name: the scheduler is degraded
    troubles: dict[str, Trouble] = field(default_factory=dict, init=False)
    started: bool = field(default=False, init=False)  # the timed loop runs (start() .. stop())
    closing: bool = field(default=False, init=False)
    last_tick: Heartbeat | None = field(default=None, init=False)
    #: the claim loop waits for a wake (between steps): alive, and nothing to do
    parked: bool = field(default=False, init=False)
    subscribers: list[Callable[[SchedulerEvent], None]] = field(default_factory=list, init=False)
    loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    wake_event: asyncio.Event | None = field(default=None, init=False)
    #: side work the scheduler waits for in drain() and stop(): alerts, pgid records
    side_tasks: set[asyncio.Future[Any]] = field(default_factory=set, init=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False)
    _db_thread: int | None = field(default=None, init=False)

    # -- life ----------------------------------------------------------------------------
    def open(self) -> bool:
        """Bind to the running loop and start the database thread; False if already open."""
        if self.loop is not None:
            return False
        self.loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="goalsui-scheduler-db", initializer=self._mark
        )
        self.wake_event = asyncio.Event()
        return True

    def close(self) -> None:
        """Stop the database thread (waits for the call in progress) and unbind."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.loop = None

    def _mark(self) -> None:
        """The database thread starts: note it, and lower its priority (Linux: a thread's
        own nice value; elsewhere this would renice the whole process)."""
        self._db_thread = threading.get_ident()
        if sys.platform == "linux":
            tid = threading.get_native_id()
            with contextlib.suppress(OSError):
                os.setpriority(
                    os.PRIO_PROCESS,
                    tid,
                    os.getpriority(os.PRIO_PROCESS, tid) + tuning.DB_THREAD_NICE,
                )

    def on_db_thread(self) -> bool:
        return threading.get_ident() == self._db_thread

    def beat(self, *, parked: bool = False) -> None:
        """The claim loop went round (``parked``: and now waits for a wake): note the
        heartbeat readiness checks read."""
        self.last_tick = Heartbeat(time.monotonic(), time.time())
        self.parked = parked

    def heartbeat(self) -> Heartbeat | None:
        """The claim loop's heartbeat: now while it waits for a wake (an idle loop needs
        no timer to prove it is alive), else when its current step began."""
        if self.parked and self.started and not self.closing:
            return Heartbeat(time.monotonic(), time.time())
        return self.last_tick

    # -- the database thread -----------------------------------------------------------------
    def db(self, fn: Callable[[], T], *, notify: bool = False) -> asyncio.Future[T]:
        """Run ``fn`` on the scheduler's database thread, queued before this returns (a
        pipeline hands the thread its next batch before it reports the last one);
        ``notify``: tell the service's listeners (and other processes) when it changed
        something."""
        assert self.loop is not None and self._executor is not None

        def call() -> T:
            result = fn()
            if notify and did_something(result):
                self.service.changed("runs")
            return result

        return self.loop.run_in_executor(self._executor, call)

    def submit(self, fn: Callable[[], Any], what: str) -> None:
        """Queue ``fn`` on the database thread now, without waiting (a side task: its
        failure is logged as ``what`` failing)."""
        assert self.loop is not None and self._executor is not None
        self.track(self.loop.run_in_executor(self._executor, fn), what)

    def track(self, future: asyncio.Future[Any], what: str) -> None:
        """Keep ``future`` among the side tasks until it is done; log its failure."""

        def done(f: asyncio.Future[Any]) -> None:
            self.side_tasks.discard(f)
            exc = None if f.cancelled() else f.exception()
            if exc is not None:
                log.warning("%s failed: %s", what, describe(exc))

        self.side_tasks.add(future)
        future.add_done_callback(done)

    # -- waking and telling --------------------------------------------------------------------
    def wake(self) -> None:
        """Look at the database now (thread-safe)."""
        loop, wake = self.loop, self.wake_event
        if loop is None or wake is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop is closing
            if on_loop_thread(loop):
                wake.set()
            else:
                loop.call_soon_threadsafe(wake.set)

    def emit(self, event: SchedulerEvent) -> None:
        for callback in list(self.subscribers):
            try:
                callback(event)
            except Exception:  # a subscriber never breaks the scheduler
                log.exception("scheduler subscriber failed")

    def fail(self, what: str, exc: BaseException, *, part: str | None = None) -> None:
        """A step failed and will be retried: log it, keep it in ``error``, tell subscribers.

        ``part`` is in trouble (degraded, not ready) until :meth:`ok`; its repeated
        failures are logged at most once a minute, with a count. A
        :class:`~goalsui.errors.FatalError` (going on would do harm: the database file was
        deleted) is fatal instead: the host stops the scheduler.
        """
        if isinstance(exc, FatalError):
            self.fatal(str(exc))
            return
        cause = cannot_write(exc)
        message = f"{what}: {describe(exc)}"
        if cause is not None:
            message = f"cannot write ({cause}): {message}"
        self.error = message
        trouble = None if part is None else self.troubles.get(part)
        if trouble is None:  # a first failure: logged with its traceback
            if part is not None:
                self.troubles[part] = Trouble(message, next_log=time.monotonic() + REPEAT_LOG_EVERY)
            log.warning("%s", message, exc_info=exc)
        else:
            trouble.message = message
            trouble.attempts += 1
            if time.monotonic() < trouble.next_log:
                trouble.held += 1
                return
            trouble.next_log = time.monotonic() + REPEAT_LOG_EVERY
            message = f"{message} (still failing: {trouble.attempts} attempts, {trouble.held + 1} since the last line)"
            trouble.held = 0
            log.warning("%s", message)
        self.emit(SchedulerEvent("error", message=message, at=self.clock()))

    def ok(self, part: str | None = None) -> None:
        """A step succeeded: a passing error is over (a fatal one stays); ``part``
        recovered from its trouble, if it was in one."""
        trouble = None if part is None else self.troubles.pop(part, None)
        if trouble is not None:
            took = time.time() - trouble.since
            message = f"recovered: {part} works again after {trouble.attempts} failed attempt(s) over {took:.0f}s"
            log.warning("%s", message)
            self.emit(SchedulerEvent("recovered", message=message, at=self.clock()))
        if self.state == SchedulerState.FAILED or self.closing:
            return  # a fatal error stays (also while the failed scheduler stops)
        if self.troubles:
            self.error = next(iter(self.troubles.values())).message
        elif self.error is not None:
            self.error = None

    @property
    def degraded(self) -> str | None:
        """None while every part works; else what fails, in one line (see :meth:`fail`)."""
        return "; ".join(t.text() for t in self.troubles.values()) or None

    def attempts(self, part: str) -> int:
        """How many times in a row ``part`` failed (0: it works)."""
        trouble = self.troubles.get(part)
        return 0 if trouble is None else trouble.attempts

    def fatal(self, message: str) -> None:
        """A part of the scheduler died: FAILED with ``message`` (the scheduler stops)."""
        log.error("scheduler %s failed: %s", self.owner, message)
        self.state = SchedulerState.FAILED
        self.error = message
        self.emit(SchedulerEvent("error", message=message, at=self.clock()))
        self.emit(SchedulerEvent("fatal", message=message, at=self.clock()))


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters of message."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def did_something(result: Any) -> bool:
    """Whether a database step changed anything other processes should hear about.

    A claim step counts when it claimed, skipped or ended rows or recorded outcomes. An
    empty step does not: two idle daemons would otherwise wake each other for ever
    (each answering the other's step with one of its own), which measured 1.6 % of a
    core each instead of 0.2 %. Writers announce their own changes, so nothing due is
    missed by this.
    """
    if isinstance(result, ClaimResult):
        return bool(
            result.fired or result.skipped or result.overlaps or result.ended or result.released
        )
    if isinstance(result, claims.RecoveryResult):
        return bool(result.interrupted or result.orphans)
    return bool(result)
