"""``goalsui plan``: a dry run of what will fire from now until a given time, and why.

The rules are pure (:mod:`goalsui.domain.planner`, the values in
:mod:`goalsui.domain.planned`); :func:`plan` gives them the service's records. Three
database reads in all, so the console can call it for its timeline markers; the console's
reader mode reads the same records with the standard library
(:mod:`goalsui.service.quick_plan`).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from goalsui.domain.planned import PlannedFire, plan_window
from goalsui.domain.planner import HISTORY, HISTORY_LIMIT, plan_fires

if TYPE_CHECKING:
    from goalsui.service import Service


def plan(
    service: Service,
    now: datetime,
    until: datetime,
    goal_id: str | None = None,
    zone: tzinfo | None = None,
) -> list[PlannedFire]:
    """What fires from ``now`` until ``until`` (inclusive), and why; nothing is changed.

    See :func:`goalsui.domain.planner.plan_fires` for the order and the warnings.
    """
    now, until = plan_window(now, until)
    if goal_id is not None:
        service.goals.get(goal_id)
    intents = service.intents.list(goal_id=goal_id, include_ended=False)
    history = service.runs.list(since=now - HISTORY, limit=HISTORY_LIMIT)
    return plan_fires(
        [i.record() for i in intents],
        [r.record() for r in history],
        [r.record() for r in service.runs.running()],
        service.config(),
        now,
        until,
        read=service.kb.kb_read,
        zone=zone,
    )
