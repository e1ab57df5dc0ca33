"""The status summary's counts as Core statements: the service runs them, and the first
frame runs them compiled for SQLite (:mod:`goalsui.store.frame_sql`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, select

from goalsui.domain.states import ATTENTION_RUNS
from goalsui.store.claims.binds import INTENT, RUN, Stamp
from goalsui.store.models import Goal
from goalsui.store.tables import table_of

GOAL: Any = table_of(Goal)

GOAL_COUNT = select(func.count()).select_from(GOAL)
GOAL_ERROR_COUNT = GOAL_COUNT.where(GOAL.c.error.is_not(None))
INTENTS_BY_STATUS = select(INTENT.c.status, func.count()).group_by(INTENT.c.status)
#: Runs that need the operator (failed, timed out, interrupted, missed), not dismissed,
#: started since ``_since``.
ATTENTION_SINCE = (
    select(func.count())
    .select_from(RUN)
    .where(
        RUN.c.status.in_(sorted(ATTENTION_RUNS)),
        RUN.c.dismissed == False,  # noqa: E712 - SQL, not Python
        RUN.c.started_at >= bindparam("_since", type_=Stamp()),
    )
)
