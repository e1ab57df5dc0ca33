"""The budget gate a turn passes before its runner is called. Only the first skip of a budget in a
period alerts (``Costs.claim_alert``)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from goalsui.domain.budget import Exhausted
from goalsui.domain.states import ChangeTopic
from goalsui.runners.alerts import deliver_alert, run_alert_command
from goalsui.runners.base import TurnOutcome
from goalsui.store.models import Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service


log = logging.getLogger("goalsui.runners")


async def budget_outcome(service: Service, intent: Intent, run: IntentRun) -> TurnOutcome | None:
    """A ``skipped`` outcome when a budget of ``intent`` is spent; None lets the turn run."""
    spent = await asyncio.to_thread(service.costs.block, intent)
    if spent is None:
        return None
    if await asyncio.to_thread(service.costs.claim_alert, spent):
        await _alert(service, intent, run, spent)
    return TurnOutcome("skipped", reason=f"budget: {spent.message()}", skipped=True)


async def _alert(service: Service, intent: Intent, run: IntentRun, spent: Exhausted) -> None:
    message = spent.message()
    log.warning("budget alert: %s", message)
    try:
        await asyncio.to_thread(
            deliver_alert, service, intent, run.id, message, kind="budget alert"
        )
        service.changed(ChangeTopic.ALERTS)
    except Exception as exc:  # noqa: BLE001 - an alert never stops the skip being recorded
        log.warning("budget alert could not be delivered: %s", exc)
    if command := service.config().alerts.command:
        alert: dict[str, Any] = {"kind": "budget", "intent_id": intent.id, "run_id": run.id}
        alert |= {"message": message, "auto_disabled": False}
        alert |= {k: getattr(intent, k) for k in ("title", "goal_id", "worker", "thread_id")}
        alert["at"] = service.now().isoformat(timespec="seconds")
        await run_alert_command(service, command, alert)
