"""The label of a goal's row in the Goals pane."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text

from goalsui.domain.states import GoalStatus, IntentStatus
from goalsui.tui.fmt import Palette, countdown, elapsed
from goalsui.tui.widgets.cost_panel import budget_label

if TYPE_CHECKING:
    from goalsui.domain.records import RunRecord
    from goalsui.domain.views import GoalView, WorkerView
    from goalsui.tui.model import Dashboard


def live_run(dash: Dashboard | None, w: WorkerView) -> RunRecord | None:
    """The worker's run in progress, if any."""
    if dash is None or w.intent_id is None:
        return None
    return dash.running.get(w.intent_id)


def goal_label(goal: GoalView, dash: Dashboard | None, p: Palette, now: datetime | None) -> Text:
    """A goal's row: name, status, disabled workers, budget, what runs or comes next."""
    text = Text()
    if goal.error:
        text.append("⚠ ", style=f"bold {p.failed}")
    text.append(goal.name[:40], style="bold")
    text.append("  ")
    failed = [w for w in goal.workers if w.status == IntentStatus.FAILED]
    if goal.error:
        text.append(" error in KB ", style=f"bold reverse {p.failed}")
        text.append(" ")
    if dash is not None and dash.preview:
        text.append(goal.status, style=p.muted)
        return text
    if goal.status != GoalStatus.ACTIVE:
        text.append(goal.status, style=p.warning if goal.status == GoalStatus.PAUSED else p.muted)
    elif failed and len(failed) == len(goal.workers):
        text.append("failed", style=f"bold {p.failed}")  # every worker auto-disabled
    else:
        text.append("active", style=p.ok)
        if failed:  # the worker carries the mark; the goal only counts it
            text.append(f"  {len(failed)} of {len(goal.workers)} disabled", style=p.muted)
    if dash is not None and goal.goal_id in dash.budgets:
        text.append_text(budget_label(dash.budgets[goal.goal_id], p))
    if now is None:
        return text
    running = [r for w in goal.workers if (r := live_run(dash, w)) is not None]
    if running:
        oldest = min(r.started_at for r in running)
        text.append(f"  ▶ {len(running)} running {elapsed(oldest, now)}", style=f"bold {p.running}")
    else:
        upcoming = [
            w.next_run_at for w in goal.workers if w.status == IntentStatus.ACTIVE and w.next_run_at
        ]
        if upcoming:
            text.append(f"  next {countdown(min(upcoming), now)}", style=p.muted)
    return text
