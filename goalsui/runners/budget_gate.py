"""The budget gate a turn passes before its runner is called. Only the first skip of a budget in a
period alerts (``Costs.claim_alert``)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from goalsui.domain.budget import Exhausted
from goalsui.domain.states import ChangeTopic, RunStatus
from goalsui.runners.alerts import deliver_alert
from goalsui.runners.base import TurnOutcome
from goalsui.runners.command import build_env, run_command
from goalsui.store.models import Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service


log = logging.getLogger("goalsui.runners")
ALERT_COMMAND_TIMEOUT = 10.0


async def budget_outcome(service: Service, intent: Intent, run: IntentRun) -> TurnOutcome | None:
    """A ``skipped`` outcome when a budget of ``intent`` is spent; None lets the turn run."""
    spent = await asyncio.to_thread(service.costs.block, intent)
    if spent is None:
        return None
    reason = f"budget: {spent.message()}"
    if await asyncio.to_thread(service.costs.claim_alert, spent):
        await _alert(service, intent, run, spent)
    return TurnOutcome("skipped", reason=reason, skipped=True)


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
    command = service.config().alerts.command
    if command:
        await _run_command(service, command, intent, run, message)


async def _run_command(
    service: Service, argv: tuple[str, ...], intent: Intent, run: IntentRun, message: str
) -> None:
    """Run ``alerts.command`` with the alert JSON (``kind: budget``) on stdin; never raises."""
    alert = {
        "kind": "budget",
        "intent_id": intent.id,
        "run_id": run.id,
        "message": message,
        "auto_disabled": False,
        "title": intent.title,
        "goal_id": intent.goal_id,
        "worker": intent.worker,
        "thread_id": intent.thread_id,
        "at": service.now().isoformat(timespec="seconds"),
    }
    secrets = [h.secret_env for h in service.config().hooks.values() if h.secret_env]
    try:
        result = await run_command(
            list(argv),
            stdin=json.dumps(alert, ensure_ascii=False) + "\n",
            cwd=service.kb.root,
            env=build_env({"GOALSUI_KB": str(service.kb.root)}, strip=secrets),
            timeout=ALERT_COMMAND_TIMEOUT,
            grace=1.0,
        )
    except Exception as exc:  # noqa: BLE001 - an alert hook never breaks a turn
        log.warning("alert command could not run: %s", exc)
        return
    if result.status != RunStatus.OK:
        log.warning("alert command failed: %s", result.reason or result.status)
