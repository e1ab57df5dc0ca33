"""The goals' budget lines: :func:`budget_lines`, which ``service.costs.goal_lines`` calls
with its own budgets and spend, and :func:`goal_budget_lines`, which reads them from a
:class:`~goalsui.store.snapshot.Snapshot` without the database stack (the console's reader
mode).

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
    goals: list[GoalView],
    now: datetime,
    budget_of: Callable[[str], Budget | None],
    spend_of: Callable[[str, datetime, datetime], Spend],
) -> dict[str, list[BudgetLine]]:
    """Each limit of each goal's own budget (``budget_of``) with what ``spend_of`` gives for
    its current period (in the budget's timezone, else the goal's first worker's, else UTC),
    by goal id; goals without a budget are left out."""
    out: dict[str, list[BudgetLine]] = {}
    for goal in goals:
        budget = budget_of(goal.goal_id)
        if budget is None:
            continue
        tz = budget.timezone or (goal.workers[0].timezone if goal.workers else "UTC")
        for limit in budget.limits():
            window = period_window(limit.period, now, tz)
            spent = spend_of(goal.goal_id, *window) if window else Spend()
            amount = spent.usd if limit.unit == "usd" else float(spent.tokens)
            line = BudgetLine(f"goal {goal.goal_id}", limit, amount, active=window is not None)
            out.setdefault(goal.goal_id, []).append(line)
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
    """:func:`budget_lines` from the goals' definitions and the snapshot's runs."""
    return budget_lines(goals, now, partial(goal_budget, KB(kb_root)), partial(goal_spend, snap))
