"""Housekeeping: recovery of dead owners' rows, catch-up of missed occurrences, the
sweep (recovery and expiry) and the pruning of old runs (see docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from functools import partial
from pathlib import Path
from typing import Any

from goalsui.domain.durations import format_duration
from goalsui.domain.states import IntentKind, RunStatus
from goalsui.scheduler.alerting import Alerter
from goalsui.scheduler.events import SchedulerEvent
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.tuning import CATCH_UP_GRACE, EXPIRE_EVERY, PRUNE_EVERY, PRUNE_FIRST
from goalsui.store.claims import CatchUpPlan, RecoveryResult

Row = dict[str, Any]


class Housekeeping:
    """Recovery, catch-up, sweep and prune; :meth:`run` is the ``housekeeping`` task."""

    def __init__(self, rt: Runtime, alerter: Alerter) -> None:
        self.rt = rt
        self.alerter = alerter

    async def run(self) -> None:
        """Sweep every ``sweep_interval``; prune a minute after start, then hourly."""
        rt = self.rt
        next_sweep = time.monotonic() + rt.settings.sweep_interval
        next_prune = time.monotonic() + PRUNE_FIRST
        next_expire = time.monotonic() + EXPIRE_EVERY
        while True:
            await asyncio.sleep(max(0.0, min(next_sweep, next_prune) - time.monotonic()))
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + rt.settings.sweep_interval
                expire = now >= next_expire
                if expire:
                    next_expire = now + EXPIRE_EVERY
                await self._guarded(partial(self.sweep, expire=expire), "lease sweep failed")
            if now >= next_prune:
                next_prune = now + PRUNE_EVERY
                await self._guarded(self.prune, "pruning old runs failed")

    async def _guarded(self, job: Any, what: str) -> None:
        try:
            await job()
            self.rt.ok("housekeeping")
        except Exception as exc:  # noqa: BLE001 - the next round retries; report it
            self.rt.fail(what, exc, part="housekeeping")

    async def recover(self) -> RecoveryResult:
        """Recover rows left ``firing`` by a dead process (their run: ``interrupted``)."""
        rt = self.rt
        now = rt.clock()
        result = await rt.db(
            partial(rt.backend.recover, rt.owner, now),
            notify=True,
        )
        if result.interrupted:
            rt.wake()  # their retries are due in seconds: the alarm must know, not the idle poll
        for row, run, decision in result.interrupted:
            rt.emit(
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
            self.alerter.after_failure(row, run, RunStatus.INTERRUPTED, decision.auto_disabled)
        for orphan in result.orphans:
            rt.emit(
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

    async def catch_up(self) -> list[tuple[Row, CatchUpPlan]]:
        """The catch-up rule for occurrences missed while no scheduler ran."""
        rt = self.rt
        now = rt.clock()
        limit = rt.service.config().catch_up_limit
        done = await rt.db(
            partial(
                rt.backend.catch_up,
                now=now,
                overdue_before=now - CATCH_UP_GRACE,
                kinds=(IntentKind.AT, IntentKind.CRON, IntentKind.HEARTBEAT),
                limit=limit,
            ),
            notify=True,
        )
        for row, plan in done:
            if plan.missed:
                total = len(plan.missed) + plan.more_missed
                rt.emit(
                    SchedulerEvent(
                        "run-finished",
                        row["id"],
                        None,
                        RunStatus.MISSED,
                        f"'{row['title']}': {total} occurrence(s) missed "
                        f"(older than {format_duration(limit)})",
                        title=row["title"],
                        trigger="catch-up",
                        at=now,
                    )
                )
        return done

    async def sweep(self, expire: bool = True) -> None:
        """Recover expired leases; ``expire``: end expired intents too."""
        await self.recover()
        if not expire:
            return
        rt = self.rt
        ended = await rt.db(partial(rt.backend.end_expired, now=rt.clock()), notify=True)
        if ended:
            rt.wake()

    async def prune(self) -> int:
        """Delete runs older than ``prune_after`` (and their log files); returns how many."""
        rt = self.rt
        after = rt.settings.prune_after
        removed = await rt.db(partial(rt.backend.prune, rt.clock() - after))
        if removed:
            await rt.db(partial(remove_logs, rt.service.runs_dir, removed))
            await rt.db(
                partial(
                    rt.service.journal.record,
                    "runs pruned",
                    "",
                    f"{len(removed)} runs older than {format_duration(after)}",
                    actor="scheduler",
                )
            )
        return len(removed)


def remove_logs(runs_dir: Path, removed: list[Row]) -> None:
    """Delete the log files of pruned runs (only files inside ``runs_dir``)."""
    for row in removed:
        for path in {row.get("output_path"), str(runs_dir / f"{row['id']}.log")}:
            if not path:
                continue
            p = Path(path)
            with contextlib.suppress(OSError):
                if p.is_file() and p.resolve().is_relative_to(runs_dir.resolve()):
                    p.unlink()
