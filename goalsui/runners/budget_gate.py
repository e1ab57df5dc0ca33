"""The budget gate a turn passes before its runner is called.

A turn whose budget is spent is not run: :func:`budget_outcome` returns a ``skipped``
outcome with reason ``budget: ...``. The first skip of a budget in a period raises an
alert (a thread message or goal-log line, a journal entry, and the KB's alert command);
later skips of the same budget in the same period do not (see ``Costs.claim_alert``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from goalsui.domain.budget import Exhausted
from goalsui.domain.models import Intent, IntentRun
from goalsui.errors import GoalsuiError
from goalsui.runners.base import TurnOutcome

if TYPE_CHECKING:
    from goalsui.service import Service

__all__ = ["budget_outcome"]

log = logging.getLogger("goalsui.runners")


async def budget_outcome(service: Service, intent: Intent, run: IntentRun) -> TurnOutcome | None:
    """A ``skipped`` outcome when a budget of ``intent`` is spent; None lets the turn run."""
    spent = await asyncio.to_thread(service.costs.block, intent)
    if spent is None:
        return None
    reason = f"budget: {spent.message()}"
    if await asyncio.to_thread(service.costs.claim_alert, spent):
        await _alert(service, intent, run, spent)
    return TurnOutcome("skipped", reason=reason, skipped=True)


def _deliver(service: Service, intent: Intent, run: IntentRun, message: str) -> None:
    if intent.thread_id is not None:
        try:
            service.post_message(
                message,
                thread_id=intent.thread_id,
                role="system",
                intent_id=intent.id,
                run_id=run.id,
                provenance=f"Budget alert about: {intent.title}",
            )
        except GoalsuiError:
            log.warning("budget alert for intent %s: its thread is gone", intent.id)
    elif intent.goal_id:
        try:
            service.append_goal_log(intent.goal_id, f"ALERT run {run.id}: {message}")
        except (GoalsuiError, OSError):
            log.warning("budget alert for intent %s: cannot write the goal log", intent.id)
    service.journal("alert", f"intent {intent.id}", message, actor="scheduler")
    service.changed("alerts")


async def _alert(service: Service, intent: Intent, run: IntentRun, spent: Exhausted) -> None:
    from goalsui.scheduler.alerts import Alert, run_alert_command

    message = spent.message()
    log.warning("budget alert: %s", message)
    try:
        await asyncio.to_thread(_deliver, service, intent, run, message)
    except Exception as exc:  # noqa: BLE001 - an alert never stops the skip being recorded
        log.warning("budget alert could not be delivered: %s", exc)
    command = service.config().alerts.command
    if not command:
        return
    alert = Alert(
        intent_id=intent.id,  # type: ignore[arg-type]
        run_id=run.id,
        message=message,
        auto_disabled=False,
        title=intent.title,
        goal_id=intent.goal_id,
        worker=intent.worker,
        thread_id=intent.thread_id,
        at=service.now(),
    )
    try:
        await run_alert_command(service, command, alert)
    except Exception as exc:  # noqa: BLE001 - an alert hook never breaks a turn
        log.warning("alert command could not run: %s", exc)
