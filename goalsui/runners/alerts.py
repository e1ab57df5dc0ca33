"""Where an alert goes: the intent's thread, else its goal log; always the journal; and
``alerts.command`` when set."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goalsui.domain.states import RunStatus
from goalsui.errors import GoalsuiError
from goalsui.runners.command import build_env, run_command
from goalsui.store.models import Intent

if TYPE_CHECKING:
    from goalsui.service import Service

log = logging.getLogger("goalsui.alerts")
ALERT_COMMAND_TIMEOUT = 10.0


def deliver_alert(
    service: Service, intent: Intent, run_id: int | None, message: str, *, kind: str = "alert"
) -> None:
    """Post ``message`` (blocking); ``kind`` names it in the provenance and the logs."""
    if intent.thread_id is not None:
        try:
            service.threads.post(
                message,
                thread_id=intent.thread_id,
                role="system",
                intent_id=intent.id,
                run_id=run_id,
                provenance=f"{kind.capitalize()} about: {intent.title}",
            )
        except GoalsuiError:
            log.warning("%s for intent %s: its thread is gone", kind, intent.id)
    elif intent.goal_id:
        try:
            service.files.append_log(intent.goal_id, f"ALERT run {run_id}: {message}")
        except (GoalsuiError, OSError):
            log.warning("%s for intent %s: cannot write the goal log", kind, intent.id)
    service.journal.record("alert", f"intent {intent.id}", message, actor="scheduler")


async def run_alert_command(
    service: Service,
    argv: Sequence[str],
    payload: dict[str, Any],
    *,
    name: str = "alert command",
    subject: str | None = None,
) -> bool:
    """Run an operator's command (``alerts.command``, ``notify:``) with ``payload`` as JSON on
    stdin (10 s, hook secrets stripped); True when it exited 0. A failure is logged and
    journalled as "<name> failed" about ``subject`` (default: the payload's intent). Never
    raises: an alert hook never breaks a turn or the scheduler."""
    secrets = [h.secret_env for h in service.config().hooks.values() if h.secret_env]
    try:
        result = await run_command(
            list(argv),
            stdin=json.dumps(payload, ensure_ascii=False) + "\n",
            cwd=service.kb.root,
            env=build_env({"GOALSUI_KB": str(service.kb.root)}, strip=secrets),
            timeout=ALERT_COMMAND_TIMEOUT,
            grace=1.0,
        )
        if result.status == RunStatus.OK:
            return True
        detail = result.reason or result.status
        log.warning("%s failed: %s", name, detail)
        subject = subject or f"intent {payload.get('intent_id')}"
        await asyncio.to_thread(
            service.journal.record, f"{name} failed", subject, detail, "scheduler"
        )
    except Exception as exc:  # noqa: BLE001 - logged, never raised
        log.warning("%s could not run: %s", name, exc)
    return False
