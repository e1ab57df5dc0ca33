"""Failure alerts: after ``alerts.after`` consecutive failures, at most once per cooldown.

An auto-disable always alerts. An alert is a message in the intent's thread (or a line
in the goal log), a journal entry (actor ``scheduler``, action ``alert``) and, when
``alerts.command`` is set, that command run with the alert as JSON on stdin (10 s
timeout; its failures are logged, never raised). The returned :class:`Alert` is what
the scheduler turns into a console notification.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goalsui.domain.states import FAILURE_RUNS
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.runners.alerts import deliver_alert, run_alert_command
from goalsui.store.models import Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service

__all__ = ["Alert", "alert_message", "maybe_alert"]


@dataclass(frozen=True)
class Alert:
    intent_id: int
    run_id: int | None
    message: str
    auto_disabled: bool
    title: str = ""
    consecutive_failures: int = 0
    goal_id: str | None = None
    worker: str | None = None
    thread_id: int | None = None
    at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["at"] = self.at.isoformat(timespec="seconds") if self.at else None
        return data


def alert_message(
    intent: Intent, run: IntentRun | None, failures: int, *, auto_disabled: bool
) -> str:
    """One line for people: what failed, how often, the last error, what to do."""
    who = f"{intent.goal_id}/{intent.worker}" if intent.worker else f"intent {intent.id}"
    title = plain(intent.title, limit=80)
    last = ""
    if run is not None:
        reason = plain(" ".join((run.reason or "no reason recorded").split()), limit=200)
        last = f"; last: run {run.id} {run.status}: {reason}"
    if auto_disabled:
        return (
            f"{who} ({title}) auto-disabled after {failures} consecutive failures{last}. "
            f"Resume it with 'goalsui intent resume {intent.id}'."
        )
    return f"{who} ({title}) failed {failures} times in a row{last}."


async def maybe_alert(
    service: Service, intent: Intent, run: IntentRun | None, *, auto_disabled: bool
) -> Alert | None:
    """Raise an alert for a failing intent when the policy says so; None otherwise.

    ``intent`` may be a snapshot: the failure count and the last alert time are
    re-read from the database. Alerts are rate-limited per intent by ``alerts.cooldown``
    (a compare-and-set on ``last_alert_at``); an auto-disable always alerts.
    """
    if intent.id is None:
        return None  # never stored: nothing to alert about
    policy = service.config().alerts
    try:
        fresh = await asyncio.to_thread(service.intents.get, intent.id)
    except GoalsuiError:
        fresh = intent
    failures = max(intent.consecutive_failures or 0, fresh.consecutive_failures or 0)
    if not auto_disabled:
        if run is not None and run.status not in FAILURE_RUNS:
            return None
        if failures < policy.after:
            return None
    if fresh.id is None:
        return None
    now = service.now()
    won = await asyncio.to_thread(
        service.runs.mark_alerted,
        fresh.id,
        now,
        cooldown=None if auto_disabled else policy.cooldown,
    )
    if not won:
        return None
    alert = Alert(
        intent_id=fresh.id,
        run_id=run.id if run is not None else None,
        message=alert_message(fresh, run, failures, auto_disabled=auto_disabled),
        auto_disabled=auto_disabled,
        title=fresh.title,
        consecutive_failures=failures,
        goal_id=fresh.goal_id,
        worker=fresh.worker,
        thread_id=fresh.thread_id,
        at=now,
    )
    await asyncio.to_thread(deliver_alert, service, fresh, alert.run_id, alert.message)
    service.changed("alerts")
    if policy.command:
        await run_alert_command(service, policy.command, alert.as_json())
    return alert
