"""Where an alert goes: the intent's thread, else its goal log; always the journal."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from goalsui.errors import GoalsuiError
from goalsui.store.models import Intent

if TYPE_CHECKING:
    from goalsui.service import Service

log = logging.getLogger("goalsui.alerts")


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
