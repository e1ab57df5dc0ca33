"""Run records the rules build without running anything. Pure."""

from __future__ import annotations

from datetime import datetime

from goalsui.domain.models import IntentRun
from goalsui.domain.states import RunStatus, RunTrigger

#: The reason of a fire skipped because the previous run of the intent still runs.
OVERLAP = "overlap"


def skipped_run(
    intent_id: int,
    attempt: int,
    trigger: RunTrigger | str,
    at: datetime,
    *,
    reason: str = OVERLAP,
    event_id: int | None = None,
) -> IntentRun:
    """A run recorded ``skipped`` at ``at`` (started and finished at once) for ``reason``."""
    return IntentRun(
        intent_id=intent_id,
        attempt=attempt,
        trigger=str(trigger),
        status=RunStatus.SKIPPED,
        reason=reason,
        planned_at=at,
        started_at=at,
        finished_at=at,
        event_id=event_id,
    )
