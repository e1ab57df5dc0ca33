"""Alerts after failures, as side tasks that never hold up the scheduler (see
:mod:`goalsui.scheduler.alerts` for the rules and docs/architecture.md)."""

from __future__ import annotations

import logging

from goalsui.domain.states import FAILURE_RUNS
from goalsui.scheduler import alerts
from goalsui.scheduler.events import SchedulerEvent
from goalsui.scheduler.records import build
from goalsui.scheduler.runtime import Runtime
from goalsui.store.claims.shapes import Row
from goalsui.store.models import Intent, IntentRun

log = logging.getLogger("goalsui.scheduler")


class Alerter:
    """Starts an alert for each failing run (the scheduler waits for them in drain())."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def after_failure(self, row: Row, run: Row, status: str, auto_disabled: bool) -> None:
        """A run failed (or its intent was auto-disabled): maybe alert, in a side task."""
        if status not in FAILURE_RUNS and not auto_disabled:
            return
        loop = self.rt.loop
        if loop is None:
            return
        task = loop.create_task(self._alert(dict(row), dict(run), auto_disabled))
        self.rt.track(task, f"the alert for intent {row.get('id')}")

    async def _alert(self, row: Row, run: Row, auto_disabled: bool) -> None:
        try:
            alert = await alerts.maybe_alert(
                self.rt.service,
                build(Intent, row),
                build(IntentRun, run),
                auto_disabled=auto_disabled,
            )
        except Exception as exc:  # noqa: BLE001 - an alert never breaks the scheduler
            log.warning("alert for intent %s failed: %s", row.get("id"), exc)
            return
        if alert is None:
            return
        message = alert.message or f"'{row.get('title')}' auto-disabled after repeated failures"
        self.rt.emit(
            SchedulerEvent(
                "alert",
                row.get("id"),
                run.get("id"),
                run.get("status"),
                message,
                title=row.get("title") or "",
                at=self.rt.clock(),
            )
        )
