"""Leases: this scheduler's running intents keep their lease, and a turn whose intent
was cancelled (or whose lease another scheduler took) is stopped (see
docs/architecture.md, "Leases").
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from functools import partial

from goalsui.domain.states import IntentStatus
from goalsui.scheduler.rules import STOP_REQUESTS
from goalsui.scheduler.runtime import Runtime
from goalsui.scheduler.turns import Launcher


class Leases:
    """Renews leases every lease/3 and watches the running intents every poll."""

    def __init__(self, rt: Runtime, launcher: Launcher) -> None:
        self.rt = rt
        self.launcher = launcher

    async def run(self) -> None:
        """The ``leases`` task: renew or watch, until cancelled."""
        settings = self.rt.settings
        renew_every = settings.lease_seconds / 3
        next_renew = time.monotonic() + renew_every
        while True:
            if not self.launcher.info:  # idle: sleep until turns are launched
                self.launcher.busy.clear()
                await self.launcher.busy.wait()
                next_renew = time.monotonic() + renew_every
            await asyncio.sleep(min(settings.poll_interval, renew_every))
            try:
                if not self.launcher.info:
                    next_renew = time.monotonic() + renew_every
                elif time.monotonic() >= next_renew:
                    next_renew = time.monotonic() + renew_every
                    await self.renew()
                else:
                    await self.watch()
                self.rt.ok("leases")
            except Exception as exc:  # noqa: BLE001 - the next round retries; report it
                self.rt.fail("renewing leases failed", exc, part="leases")

    async def renew(self) -> None:
        """Extend the leases of our running intents; stop turns cancelled or lost meanwhile."""
        ids = {info.intent_id: run_id for run_id, info in self.launcher.info.items()}
        if not ids:
            return
        rt = self.rt
        until = rt.clock() + timedelta(seconds=rt.settings.lease_seconds)
        statuses = await rt.db(
            partial(
                rt.backend.renew_leases, owner=rt.owner, intent_ids=list(ids), lease_until=until
            )
        )
        self._check(ids, statuses)

    async def watch(self) -> None:
        """A cheap read: stop turns whose intent was cancelled or whose run the operator
        stopped (only the run: the schedule goes on); notice passed occurrences.

        Only turns still running are looked at: an ended one waits only to be recorded
        (its completion applies the overlap rule).
        """
        launcher, rt = self.launcher, self.rt
        tasks = launcher.tasks
        ids = {i.intent_id: run_id for run_id, i in launcher.info.items() if run_id in tasks}
        if not ids:
            return
        rows = await rt.db(partial(rt.backend.check_running, list(ids)))
        statuses = {i: r["status"] for i, r in rows.items() if r["lease_owner"] == rt.owner}
        now = rt.clock()
        for intent_id, row in rows.items():
            info = launcher.info.get(ids[intent_id])
            if info is not None:
                info.next_run_at = row["next_run_at"]
                if row["next_run_at"] is not None and row["next_run_at"] <= now:
                    rt.wake()  # an occurrence passed during the run: record the overlap
        self._check(ids, statuses)
        for intent_id, row in rows.items():
            if row["lease_owner"] == rt.owner and row.get("pending_trigger") in STOP_REQUESTS:
                launcher.cancel(ids[intent_id], "stopped")

    def _check(self, ids: dict[int, int], statuses: dict[int, str]) -> None:
        """Stop the turns whose intent is no longer ``firing`` with our lease."""
        for intent_id, run_id in ids.items():
            status = statuses.get(intent_id)
            if status == IntentStatus.FIRING:
                continue
            reason = "cancelled" if status == IntentStatus.CANCELLED else "lost"
            self.launcher.cancel(run_id, reason)
