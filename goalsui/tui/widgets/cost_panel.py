"""Cost in the console: the selected intent's last runs, the status bar's day total and
budget usage on goal rows. Runs that reported no usage are ``unknown``, never zero."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from goalsui.domain.budget import format_amount, format_usd
from goalsui.tui.fmt import Palette

if TYPE_CHECKING:
    from goalsui.domain.budget import RunPoint, Spend
    from goalsui.service.quick_costs import BudgetLine


def _short_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def cost_summary(points: Sequence[RunPoint]) -> str:
    """``last 12 runs · cost $0.42 (3 unknown) · last $0.05 · duration avg 12s, last 9.5s``."""
    if not points:
        return "no runs yet: cost and duration unknown"
    priced = [p.cost_usd for p in points if p.cost_usd is not None]
    unknown = len(points) - len(priced)
    total = format_usd(sum(priced)) if priced else "unknown"
    if priced and unknown:
        total += f" ({unknown} unknown)"
    last = format_usd(points[-1].cost_usd)
    took = [p.seconds for p in points if p.seconds is not None]
    duration = "unknown"
    if took:
        final = points[-1].seconds
        last_took = _short_seconds(final) if final is not None else "running"
        duration = f"avg {_short_seconds(sum(took) / len(took))}, last {last_took}"
    n = len(points)
    return f"last {n} run{'s' if n != 1 else ''} · cost {total} · last {last} · duration {duration}"


def today_text(spend: Spend | None) -> str:
    """The status bar's day total: empty until a run of today reported usage."""
    if spend is None or not spend.runs:
        return ""
    extra = f" +{spend.unknown} unknown" if spend.unknown else ""
    return f"{format_usd(spend.usd)}{extra}"


def budget_label(lines: Sequence[BudgetLine], palette: Palette) -> Text:
    """``  $0.40/$1.00 day`` per active limit, coloured by how much is used."""
    text = Text()
    for line in lines:
        if not line.active:
            continue
        used = format_amount(line.spent, line.limit.unit)
        cap = format_amount(line.limit.value, line.limit.unit)
        style = palette.warning if line.fraction >= 0.8 else palette.muted
        if line.fraction >= 1:
            style = f"bold {palette.failed}"
        text.append(f"  {used}/{cap} {line.limit.period}", style=style)
    return text


class CostPanel(Vertical):
    """The selected intent's cost and duration, with sparklines of its last runs."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    def __init__(self, id: str | None = "cost-panel") -> None:
        super().__init__(id=id)
        self.intent_id: int | None = None
        self.summary = ""

    def compose(self) -> ComposeResult:
        from textual.widgets import Sparkline  # loaded with the panel, after the first frame

        yield Static("", id="cost-summary", markup=False)
        yield Sparkline([], id="cost-durations", summary_function=max)
        yield Sparkline([], id="cost-costs", summary_function=max)

    def show(self, intent_id: int | None, points: Sequence[RunPoint] | None) -> None:
        """Show the runs of ``intent_id``; None hides the panel (nothing selected)."""
        self.intent_id = intent_id
        if intent_id is None or points is None:
            self.display = False
            return
        from textual.widgets import Sparkline

        self.display = True
        self.summary = cost_summary(points)
        self.query_one("#cost-summary", Static).update(Text(self.summary, no_wrap=True))
        durations = [p.seconds for p in points if p.seconds is not None]
        costs = [p.cost_usd for p in points if p.cost_usd is not None]
        self.query_one("#cost-durations", Sparkline).data = durations
        cost_line = self.query_one("#cost-costs", Sparkline)
        cost_line.data = costs
        cost_line.display = bool(costs)
