"""The goals' budget lines from a :class:`~goalsui.store.snapshot.Snapshot`, as
``service.costs.goal_lines`` gives them, without the database stack (the console's reader
mode). :class:`BudgetLine` and :func:`budget_lines` are the service's own.

Import nothing from the service's other modules here: they load the ORM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from goalsui.domain.budget import Budget, BudgetLimit, Spend, period_window
from goalsui.domain.views import GoalView
from goalsui.errors import GoalsuiError
from goalsui.kb.layout import KB
from goalsui.store import frame_sql
from goalsui.store.snapshot import Snapshot, stamp


@dataclass(frozen=True)
class BudgetLine:
    """One limit of a scope with what was spent in its current period."""

    scope: str
    limit: BudgetLimit
    spent: float
    active: bool  # False: a night limit outside the night

    @property
    def fraction(self) -> float:
        return self.spent / self.limit.value if self.limit.value else 1.0


def budget_lines(
    goal_id: str,
    budget: Budget,
    now: datetime,
    tz: str,
    spend: Callable[[datetime, datetime], Spend],
) -> list[BudgetLine]:
    """Each limit of a goal's own budget with what ``spend`` gives for its current period."""
    out = []
    for limit in budget.limits():
        window = period_window(limit.period, now, budget.timezone or tz)
        spent = spend(*window) if window else Spend()
        amount = spent.usd if limit.unit == "usd" else float(spent.tokens)
        out.append(BudgetLine(f"goal {goal_id}", limit, amount, active=window is not None))
    return out


def goal_budget(kb: KB, goal_id: str) -> Budget | None:
    """The goal's own budget, read as ``KB.load_goal`` reads its definition (None: no
    budget, no such goal, or a definition that does not validate)."""
    try:
        return kb.goal_definition(goal_id).budget
    except GoalsuiError:  # KBError included
        return None


def goal_spend(snap: Snapshot, goal_id: str, start: datetime, end: datetime) -> Spend:
    """What the goal's runs started in [start, end) reported (``usage.SPEND_OF_GOAL``)."""
    row = snap.conn.execute(frame_sql.SPEND_OF_GOAL, (stamp(start), stamp(end), goal_id)).fetchone()
    return Spend(float(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0))


def goal_budget_lines(
    snap: Snapshot, kb_root: Path, goals: list[GoalView], now: datetime
) -> dict[str, list[BudgetLine]]:
    """The budget lines of the goals that have a budget, by goal id (the console's
    ``load_costs``: the first worker's timezone, else UTC)."""
    kb = KB(kb_root)
    out: dict[str, list[BudgetLine]] = {}
    for goal in goals:
        budget = goal_budget(kb, goal.goal_id)
        if budget is None:
            continue
        tz = goal.workers[0].timezone if goal.workers else "UTC"
        spend = partial(goal_spend, snap, goal.goal_id)
        if lines := budget_lines(goal.goal_id, budget, now, tz, spend):
            out[goal.goal_id] = lines
    return out
