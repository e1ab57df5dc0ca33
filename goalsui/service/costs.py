"""Spend and budgets (``service.costs``): what runs cost, and whether a turn may start.

Definitions' budgets are re-read only when their modification time changes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from goalsui.domain.budget import (
    Budget,
    Exhausted,
    RunPoint,
    Spend,
    exhausted,
    period_window,
)
from goalsui.domain.views import GoalView
from goalsui.errors import GoalsuiError
from goalsui.service.context import ServiceContext
from goalsui.service.quick_costs import BudgetLine, budget_lines
from goalsui.store import usage as queries
from goalsui.store.models import Intent, Meta

_ALERT_PREFIX = "budget-alert:"


@dataclass(frozen=True)
class Scope:
    """A budget and where it applies: ``kb``, ``goal g`` or ``worker g/w``."""

    name: str
    budget: Budget
    where: str  # the file that sets it
    goal_id: str | None = None
    worker: str | None = None


class Costs:
    """Spend queries and budget checks of one service (thread-safe)."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self._defs: dict[str, tuple[tuple[int, ...], dict[str | None, Budget | None]]] = {}

    def scopes(self, intent: Intent) -> list[Scope]:
        """The budgets that apply to ``intent``'s runs, narrowest first."""
        out = []
        goal_id, worker = intent.goal_id, intent.worker
        if goal_id:
            budgets = self._goal_budgets(goal_id)
            own = budgets.get(worker) if worker else None
            if worker and own is not None:
                where = f"{goal_id}/workers/{worker}/definition.yaml"
                out.append(Scope(f"worker {goal_id}/{worker}", own, where, goal_id, worker))
            shared = budgets.get(None)
            if shared is not None:
                where = f"{goal_id}/definition.yaml"
                out.append(Scope(f"goal {goal_id}", shared, where, goal_id))
        kb_budget = self.ctx.config().budget
        if kb_budget is not None:
            out.append(Scope("kb", kb_budget, "goalsui.yaml"))
        return out

    def block(self, intent: Intent, now: datetime | None = None) -> Exhausted | None:
        """The first spent budget that stops ``intent``'s next turn, or None."""
        now = now or self.ctx.now()
        for scope in self.scopes(intent):
            tz = scope.budget.timezone or intent.timezone or "UTC"
            for limit in scope.budget.limits():
                window = period_window(limit.period, now, tz)
                if window is None:
                    continue
                spent = exhausted(
                    limit, self.spend(*window, goal_id=scope.goal_id, worker=scope.worker)
                )
                if spent is not None:
                    return Exhausted(scope.name, limit, spent, window[0], window[1], scope.where)
        return None

    def claim_alert(self, spent: Exhausted) -> bool:
        """True once per budget and period (across processes): the caller alerts then."""
        key = _ALERT_PREFIX + spent.key()
        family = _ALERT_PREFIX + spent.key().rsplit("|", 1)[0] + "|"
        try:
            with self.ctx.store.write() as s:
                s.add(Meta(key=key, value=spent.end.isoformat()))
                s.flush()
                # older periods of the same budget are forgotten (one row per budget)
                s.execute(
                    delete(Meta).where(col(Meta.key).startswith(family), col(Meta.key) != key)
                )
        except IntegrityError:
            return False
        return True

    def goal_lines(self, goals: list[GoalView]) -> dict[str, list[BudgetLine]]:
        """The budget lines of the goals with a budget of their own (the console's goal rows)."""
        return budget_lines(
            goals,
            self.ctx.now(),
            lambda goal_id: self._goal_budgets(goal_id).get(None),
            lambda goal_id, start, end: self.spend(start, end, goal_id=goal_id),
        )

    def day_total(self) -> Spend:
        """What every run started today reported (from local midnight)."""
        start = self.ctx.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
        return queries.spend(self.ctx.store.read_engine, start, start + timedelta(days=1))

    def spend(
        self,
        start: datetime,
        end: datetime,
        *,
        goal_id: str | None = None,
        worker: str | None = None,
    ) -> Spend:
        return queries.spend(self.ctx.store.read_engine, start, end, goal_id=goal_id, worker=worker)

    def recent_runs(self, intent_id: int, limit: int = 30) -> list[RunPoint]:
        return queries.recent_runs(self.ctx.store.read_engine, intent_id, limit)

    def _goal_budgets(self, goal_id: str) -> dict[str | None, Budget | None]:
        """{None: the goal's budget, worker: its budget}; cached until a definition changes."""
        try:
            root = self.ctx.kb.goal_dir(goal_id)
        except GoalsuiError:
            return {}
        stamp = _stamp(root)
        with self._lock:
            cached = self._defs.get(goal_id)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        loaded = self.ctx.kb.load_goal(goal_id)
        budgets: dict[str | None, Budget | None] = {n: w.budget for n, w in loaded.workers.items()}
        budgets[None] = loaded.definition.budget if loaded.definition else None
        with self._lock:
            self._defs[goal_id] = (stamp, budgets)
        return budgets


def _stamp(goal_dir: Path) -> tuple[int, ...]:
    """Modification times of the goal's definition files (and the workers folder)."""
    out = []
    workers = goal_dir / "workers"
    paths = [goal_dir / "definition.yaml", workers]
    if workers.is_dir():
        paths += sorted(p / "definition.yaml" for p in workers.iterdir())
    for path in paths:
        try:
            out.append(path.stat().st_mtime_ns)
        except OSError:
            out.append(-1)
    return tuple(out)
