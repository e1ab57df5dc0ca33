"""Starting turns: one task per claimed run, started on time (turns claimed ahead wait on
one gate per due time), its outcome queued for the writer and its slot free as soon as
it ends (see docs/architecture.md, "The scheduler").
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from goalsui.domain.interrupts import CONFIG
from goalsui.domain.states import RunStatus
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler.events import RunningInfo, SchedulerEvent
from goalsui.scheduler.heap import BurstPause
from goalsui.scheduler.outcomes import Outcomes
from goalsui.scheduler.records import build
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.tuning import LAUNCH_SLICE
from goalsui.store.claims import Claimed, ClaimResult, Completion
from goalsui.store.models import Event, Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service

log = logging.getLogger("goalsui.scheduler")

#: ``async def turn(service, intent, run, *, event, cancel) -> TurnOutcome``.
TurnFunc = Callable[..., Awaitable[TurnOutcome]]
Snapshot = tuple[Any, ...]  # (kind, schedule, timezone) of the intent when it was claimed

_VALID_OUTCOMES = {
    RunStatus.OK,
    RunStatus.SILENT,
    RunStatus.FAILED,
    RunStatus.TIMEOUT,
    RunStatus.CANCELLED,
    RunStatus.SKIPPED,  # a turn that decided not to run (e.g. a nightshift worker with no task)
}


async def default_turn(
    service: Service, intent: Intent, run: IntentRun, **kwargs: Any
) -> TurnOutcome:
    """The real turn: :func:`goalsui.runners.turn.run_turn`."""
    from goalsui.runners.turn import run_turn

    return await run_turn(service, intent, run, **kwargs)


class Launcher:
    """The turns this scheduler runs now, and how they start and end."""

    def __init__(self, rt: Runtime, turn: TurnFunc | None, outcomes: Outcomes) -> None:
        self.rt = rt
        self.outcomes = outcomes
        self.info: dict[int, RunningInfo] = {}
        self.cancels: dict[int, asyncio.Event] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.starting = 0  # turns launched, due now, whose turn has not been called yet
        self.gates: dict[datetime, asyncio.Future[None]] = {}  # turns claimed ahead, by due time
        self.busy = asyncio.Event()  # set when turns are launched (the lease loop wakes)
        self.gc_pause = BurstPause()
        self.host = socket.gethostname()
        self.set_turn(turn)

    def set_turn(self, turn: TurnFunc | None) -> None:
        """Use ``turn`` (None: the real runner) for the turns started from now on."""
        self.turn: TurnFunc = turn or default_turn
        self._takes_grace = turn is None or accepts(turn, "grace")
        self._takes_spawn = turn is None or accepts(turn, "on_spawn")

    # -- starting -------------------------------------------------------------------------------
    async def launch(self, result: ClaimResult) -> list[int]:
        """Report skipped runs and start a task per fired one, yielding to the loop every
        ``LAUNCH_SLICE`` seconds (turns due now, and the timers of turns due meanwhile,
        start on time, not behind a whole batch)."""
        loop = self.rt.loop
        assert loop is not None
        self._report_skips(result)
        started: list[int] = []
        now, loop_now = self.rt.clock(), loop.time()
        clock = time.perf_counter
        slice_end = clock() + LAUNCH_SLICE
        for item in result.fired:
            if clock() >= slice_end:
                await asyncio.sleep(0)
                slice_end = clock() + LAUNCH_SLICE
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
            self.info[run_id] = info
            cancel = self.cancels[run_id] = asyncio.Event()
            snapshot = (row["kind"], row.get("schedule"), row.get("timezone"))
            start_at = loop_now + (run["started_at"] - now).total_seconds()  # loop clock
            due_now = start_at <= loop_now
            gate = None if due_now else self._gate(run["started_at"], start_at)
            self.tasks[run_id] = loop.create_task(
                self._execute(info, item, cancel, snapshot, gate, due_now),
                name=f"goalsui-run-{run_id}",
            )
            if due_now:
                self.starting += 1
            started.append(run_id)
        if started:
            self.busy.set()
            self.gc_pause.launched(loop, len(self.info))
        return started

    def _report_skips(self, result: ClaimResult) -> None:
        """Tell the subscribers about the overlaps and skips a claim step recorded."""
        passed = {run["intent_id"] for run in result.overlaps}
        for info in self.info.values() if passed else ():
            if info.intent_id in passed:
                info.next_run_at = None  # advanced in the database; watch() re-reads it
        for run in result.overlaps:
            self.rt.emit(
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
            self.rt.emit(
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

    def _gate(self, due: datetime, start_at: float) -> asyncio.Future[None]:
        """The gate of the turns due at ``due`` (one timer for all of them, at
        ``start_at`` on the loop clock): a burst claimed ahead starts at once when due,
        without a timer per turn (10,000 timers woke ~7 us a turn later each, measured)."""
        gate = self.gates.get(due)
        if gate is None:
            loop = self.rt.loop
            assert loop is not None
            gate = self.gates[due] = StartGate(loop=loop)
            loop.call_at(start_at, self.open_gate, due)
        return gate

    def open_gate(self, due: datetime) -> None:
        gate = self.gates.pop(due, None)
        if gate is not None and not gate.done():
            gate.set_result(None)

    def open_all_gates(self) -> None:
        """Turns claimed ahead see their cancel now, not when due (stopping)."""
        for due in list(self.gates):
            self.open_gate(due)

    # -- running ------------------------------------------------------------------------------------
    def _kwargs(self, run_id: int, item: Claimed, cancel: asyncio.Event) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "event": build(Event, item.event) if item.event else None,
            "cancel": cancel,
        }
        if self._takes_grace:
            kwargs["grace"] = self.rt.settings.grace_seconds
        if self._takes_spawn:
            kwargs["on_spawn"] = partial(self._spawned, run_id)
        return kwargs

    async def _execute(
        self,
        info: RunningInfo,
        item: Claimed,
        cancel: asyncio.Event,
        snapshot: Snapshot,
        gate: asyncio.Future[None] | None = None,
        starting: bool = False,
    ) -> None:
        """Run one turn and queue its outcome. ``gate``: claimed ahead, it starts when that
        opens (its due time). ``starting``: it is counted in ``starting`` (due now) until
        its turn is called."""
        try:
            # The turn's records are built in its own task (a record that cannot be built
            # is a failed run), before it waits for its start time.
            intent = build(Intent, item.intent)
            run = build(IntentRun, item.run)
            kwargs = self._kwargs(info.run_id, item, cancel)
            if gate is not None:  # claimed ahead: start on time
                await gate
            if starting:
                starting = False
                self.starting -= 1
            outcome = await self._call(info, intent, run, cancel, kwargs)
        except asyncio.CancelledError:
            outcome = TurnOutcome("cancelled", reason="stopped: the scheduler shut down")
            info.cancel_reason = info.cancel_reason or "shutdown"
        except Exception as exc:  # a failing runner is a failed run
            log.exception("run %s: the runner raised", info.run_id)
            outcome = TurnOutcome(
                "failed",
                reason=f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
            )
        if starting:  # it never got as far as its turn
            self.starting -= 1
        self._ended(info, completion(info, outcome, snapshot, item.run.get("event_id")))

    async def _call(
        self,
        info: RunningInfo,
        intent: Intent,
        run: IntentRun,
        cancel: asyncio.Event,
        kwargs: dict[str, Any],
    ) -> TurnOutcome:
        """Call the turn (unless it was cancelled before its start)."""
        if cancel.is_set():
            return TurnOutcome("cancelled", reason="stopped before it started")
        self.rt.emit(
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
        outcome = await self.turn(self.rt.service, intent, run, **kwargs)
        if not isinstance(outcome, TurnOutcome):
            return TurnOutcome(
                "failed", reason=f"internal error: the runner returned {type(outcome).__name__}"
            )
        return outcome

    def _ended(self, info: RunningInfo, done: Completion) -> None:
        """A turn ended: queue its outcome, free its slot, wake whoever records it."""
        outcomes = self.outcomes
        outcomes.put(done)
        self.tasks.pop(info.run_id, None)
        rt = self.rt
        if rt.started and not rt.closing and len(self.tasks) + 1 >= rt.settings.max_concurrency:
            # Due rows may wait for this slot: the next step records the outcome in the
            # same transaction as its claims.
            rt.wake()
        if not self.starting:
            # ... else the writer does, batched with others ending soon. Not while due
            # turns wait to start: they come first (the last of them to end wakes it).
            outcomes.wake()

    def _spawned(self, run_id: int, pgid: int) -> None:
        """The runner spawned its process group: note host and pgid on the run."""
        info = self.info.get(run_id)
        if info is not None:
            info.pgid = pgid
        backend = self.rt.backend
        self.rt.submit(
            partial(backend.record_process_group, run_id, self.host, pgid),
            f"recording the process group of run {run_id}",
        )

    def forget(self, run_id: int) -> RunningInfo | None:
        """The run's outcome is recorded: it is no longer ours."""
        self.cancels.pop(run_id, None)
        info = self.info.pop(run_id, None)
        if self.rt.loop is not None:
            self.gc_pause.recorded(self.rt.loop, len(self.info))
        return info

    # -- stopping ----------------------------------------------------------------------------------
    async def stop_all(self, grace: float, margin: float) -> None:
        """Ask every turn to stop, give them ``grace`` (+ ``margin``), cancel the rest."""
        for info in self.info.values():
            info.cancel_reason = info.cancel_reason or "shutdown"
        for event in self.cancels.values():
            event.set()
        self.open_all_gates()
        tasks = list(self.tasks.values())
        if tasks:
            _, left = await asyncio.wait(tasks, timeout=grace + margin)
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left, timeout=margin + 1)

    def cancel(self, run_id: int, reason: str) -> None:
        """Stop a running turn (its intent was cancelled, its run stopped, or the lease lost)."""
        info = self.info.get(run_id)
        if info is None or info.cancel_reason:
            return
        info.cancel_reason = reason
        log.info("run %s of intent %s: %s; stopping it", run_id, info.intent_id, reason)
        event = self.cancels.get(run_id)
        if event is not None:
            event.set()


def completion(
    info: RunningInfo, outcome: TurnOutcome, snapshot: Snapshot, event_id: int | None
) -> Completion:
    """The outcome as the writer records it (a cancel by shutdown or a lost lease is
    ``interrupted``); built by position, as one is made per fire."""
    status, reason = outcome.status, outcome.reason
    if status not in _VALID_OUTCOMES:
        status, reason = RunStatus.FAILED, f"internal error: unknown outcome {outcome.status!r}"
    if (
        outcome.config_error
        and status == RunStatus.FAILED
        and not (reason or "").startswith(CONFIG)
    ):
        reason = CONFIG + (reason or "the runner is not configured")
    why = info.cancel_reason
    if why is not None and status == RunStatus.CANCELLED:
        if why == "shutdown":
            status, reason = RunStatus.INTERRUPTED, "interrupted: the scheduler stopped (shutdown)"
        elif why == "lost":
            status, reason = RunStatus.INTERRUPTED, "interrupted: this scheduler lost its lease"
        elif why == "cancelled":
            reason = reason or "the intent was cancelled"
        elif why == "stopped":
            reason = "stopped by the operator; the schedule goes on"
    usage, path, argv = outcome.usage, outcome.output_path, outcome.argv
    return Completion(
        info.run_id,
        info.intent_id,
        status,
        reason,
        outcome.exit_code,
        outcome.output_tail,
        str(path) if path else None,
        snapshot,
        event_id,
        usage.tokens_in if usage else None,
        usage.tokens_out if usage else None,
        usage.cost_usd if usage else None,
        usage.model if usage else None,
        outcome.prompt,
        list(argv) if argv is not None else None,
        outcome.infrastructure,
        outcome.skipped,
        outcome.config_error and outcome.status == RunStatus.FAILED,
    )


def accepts(func: Callable[..., Any], name: str) -> bool:
    """Whether ``func`` takes a keyword argument ``name`` (or any keyword)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class StartGate(asyncio.Future[None]):
    """The future that turns claimed ahead for one due time wait on. Cancelling a waiting
    task must not cancel it (``Task.cancel`` cancels the future its task waits on, and the
    other turns wait on it too): the task gets its ``CancelledError`` when the gate opens."""

    def cancel(self, msg: Any = None) -> bool:
        return False
