"""Reports: nightshift morning reports, newest night first, beside a timeline of that night
(a report is listed under the date its night starts)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown, Tabs

from goalsui.domain.nightshift import night_window
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import RUN_GLYPH, Palette, duration, one_line, short_span
from goalsui.tui.md_tables import fit_tables
from goalsui.tui.model import list_reports
from goalsui.tui.screens.base import DataScreen
from goalsui.tui.widgets.branches_pane import BranchesPane
from goalsui.tui.widgets.keyed_table import KeyedTable, Row
from goalsui.tui.widgets.tab_bar import TabBar

if TYPE_CHECKING:
    from goalsui.domain.records import IntentRecord, RunRecord
    from goalsui.service import Service

LANE = 24
#: a morning report: the night it covers (ISO date it starts), its goal, its path in the goal
Report = tuple[str, str, str]
#: Cells of the report pane that are not the Markdown's text (borders, padding, scrollbar).
DOC_CHROME = 8


@dataclass
class Night:
    """The runs of one goal in the night a report covers."""

    goal_id: str
    night: date  # the date it starts
    start: datetime
    end: datetime
    zone: str
    rows: list[tuple[IntentRecord, RunRecord]] = field(default_factory=list)


def load_night(service: Service, goal_id: str, night_name: date) -> Night:
    """The runs of the night that starts on ``night_name`` (noon to noon, goal's zone)."""
    intents = [i.record() for i in service.intents.list(goal_id=goal_id)]
    zone = next((i.timezone for i in intents if i.kind == "cron" and i.timezone), "UTC")
    start, end = night_window(night_name, zone)
    night = Night(goal_id, night_name, start, end, zone)
    for intent in intents:
        runs = service.runs.list(intent_id=intent.id, since=start, limit=1000)
        night.rows += [(intent, run.record()) for run in runs if run.started_at < end]
    night.rows.sort(key=lambda pair: (pair[1].planned_at or pair[1].started_at, pair[1].id))
    return night


def lane(night: Night, run: RunRecord, palette: Palette, width: int = LANE) -> Text:
    """A gantt lane over the night: ``│`` planned, a bar from start to finish."""
    span = (night.end - night.start).total_seconds()
    cells = [("·", palette.muted)] * width

    def pos(when: datetime) -> int:
        return max(0, min(width - 1, int((when - night.start).total_seconds() / span * width)))

    colour = palette.run(run.status)
    first = pos(run.started_at)
    last = pos(run.finished_at or run.started_at)
    for i in range(first, last + 1):
        cells[i] = ("█", colour)
    if run.planned_at is not None:
        p = pos(run.planned_at)
        if cells[p][0] != "█":
            cells[p] = ("│", palette.accent)
    return Text.assemble(*cells)


def night_row(night: Night, intent: IntentRecord, run: RunRecord, palette: Palette) -> Row:
    """A run of the night: worker, planned and actual start (goal's zone), lateness, the lane."""
    planned = run.planned_at
    ran = run.status not in (RunStatus.MISSED, RunStatus.SKIPPED)
    late = (run.started_at - planned).total_seconds() if planned and ran else None
    late_text = "-" if late is None else ("+" + short_span(late) if late >= 1 else "0s")
    return f"run:{run.id}", (
        Text(one_line(intent.worker or intent.title, 12)),
        _hm(planned, night.zone),
        _hm(run.started_at if ran else None, night.zone),
        Text(late_text, style=palette.warning if late and late > 60 else ""),
        duration(run.started_at, run.finished_at) if ran else "-",
        Text(
            f"{RUN_GLYPH.get(run.status, '?')} {run.status}",
            style=f"bold {palette.run(run.status)}",
        ),
        lane(night, run, palette),
    )


def _hm(when: datetime | None, zone: str) -> str:
    return when.astimezone(ZoneInfo(zone)).strftime("%H:%M") if when else "-"


#: The panes under the report list in the stacked layout, one at a time: tab id, pane id, label.
STACKED_PANES = (
    ("report", "reports-doc", "Report"),
    ("branches", "reports-branches", "Branches"),
    ("night", "reports-night-box", "Night"),
)


class ReportsScreen(DataScreen[Report]):
    """Left: the reports and that night's runs; right: the report as Markdown. Narrower
    than ``STACK_BELOW`` one pane at a time shows under the list (side by side, the report
    would wrap at some 40 cells)."""

    COLUMNS = (("night", "night", 10), ("goal", "goal", 20))  # the reports list
    COUNT_IN = "#reports-list-box"
    STACK_BELOW = 140
    HORIZONTAL_BREAKPOINTS = [(0, "-stacked"), (STACK_BELOW, "-side-by-side")]
    BINDINGS = [
        Binding(
            "1", "focus_pane('reports-list-box')", "Reports list", id="reports.list", show=False
        ),
        Binding("2", "show_pane('report')", "Report", id="reports.report", show=False),
        Binding("3", "show_pane('branches')", "Branches", id="reports.branches", show=False),
        Binding("4", "show_pane('night')", "Night", id="reports.night", show=False),
    ]

    shown = "report"  # the pane under the list in the stacked layout

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.add_class("-show-report")  # before mounting: a class added later restyles all

    _report_text = ""  # the open report, made plain
    _open: Report | None = None  # the report shown
    _rendered = ""  # what the Markdown widget shows (its tables fitted to the pane)

    HEADING = "Morning reports"

    def panes(self) -> ComposeResult:
        with Horizontal(id="reports-body"):
            with Vertical(id="reports-left"):
                with Container(id="reports-list-box", classes="pane") as box:
                    box.border_title = "Reports (newest first)"
                    yield KeyedTable(id="reports-list", flex_column="goal")
                yield TabBar(
                    {name: f"{n + 2} {label}" for n, (name, _, label) in enumerate(STACKED_PANES)},
                    id="reports-tabs",
                )
                with Container(id="reports-night-box", classes="pane") as box:
                    box.border_title = "That night: planned vs actual start"
                    yield KeyedTable(id="reports-night")
                yield BranchesPane(id="reports-branches", classes="pane")
            with VerticalScroll(id="reports-doc", classes="pane") as doc:
                doc.border_title = "Report"
                yield Markdown("", id="reports-markdown")

    def on_mount(self) -> None:
        night = self.query_one("#reports-night", KeyedTable)
        for label, key, width in (
            ("worker", "worker", 12),
            ("plan", "planned", 5),
            ("start", "started", 5),
            ("late", "late", 6),
            ("took", "took", 6),
            ("status", "status", 11),
            ("night", "lane", LANE),
        ):
            night.add_column(label, key=key, width=width)
        # DataScreen.on_mount runs next (Textual calls each class's handler)

    # -- the stacked layout: one pane at a time under the list -----------------------------------
    def show_pane(self, name: str) -> None:
        self.shown = name
        for other, _, _ in STACKED_PANES:
            self.set_class(other == name, f"-show-{other}")
        self.query_one(TabBar).pick(name)

    def action_show_pane(self, name: str) -> None:
        """Show pane ``name`` (stacked layout) and focus it."""
        if self.maximized is not None:
            self.minimize()
        self.show_pane(name)
        pane = self.query_one(f"#{dict((n, p) for n, p, _ in STACKED_PANES)[name]}")
        target: Widget = next(iter(pane.query(KeyedTable)), pane)
        self.call_after_refresh(target.focus)

    def action_focus_pane(self, pane: str) -> None:
        if self.maximized is not None:
            self.minimize()
        self.query_one(f"#{pane}").query_one(KeyedTable).focus()

    @on(Tabs.TabActivated, "#reports-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        name = TabBar.name_of(event.tab)
        if name != self.shown:
            self.action_show_pane(name)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Moving the focus (tab, a click) into a hidden pane shows it."""
        super().on_descendant_focus(event)
        for name, pane_id, _ in STACKED_PANES:
            pane = self.query_one(f"#{pane_id}")
            if event.widget is pane or pane in event.widget.ancestors:
                if name != self.shown:
                    self.show_pane(name)
                return

    def fetch(self, service: Service) -> list[Report]:
        return list_reports(service)

    def show(self, reports: list[Report]) -> None:
        self.show_items(reports)
        if not reports:
            self._report_text = self._rendered = ""
            self.query_one(Markdown).update(
                "_No morning reports yet._\n\nThe nightshift reporter writes "
                "`<goal>/reports/YYYY-MM-DD.md` each morning, named by the date its night "
                "started."
            )

    def row(self, item: Report, now: datetime, palette: Palette) -> Row:
        night, goal_id, rel = item
        return f"{goal_id}|{rel}", (night, Text(goal_id.rsplit("-", 1)[0]))

    def describe(self) -> None:
        """Open the report under the cursor (once)."""
        report = self.selected()
        if report is not None and report != self._open:
            self._open = report
            night, goal_id, rel = report
            self.load_report(goal_id, rel, date.fromisoformat(night))

    @work(name="Reading the report", exclusive=True, group="report", exit_on_error=False)
    async def load_report(self, goal_id: str, rel: str, night_name: date) -> None:
        service = goals_app(self).service
        text = await asyncio.to_thread(service.files.read, goal_id, rel)
        night = await asyncio.to_thread(load_night, service, goal_id, night_name)
        self.show_report(goal_id, rel, text, night)

    def show_report(self, goal_id: str, rel: str, text: str, night: Night) -> None:
        doc = self.query_one("#reports-doc", VerticalScroll)
        doc.border_title = f"{goal_id}/{rel}"
        self.query_one(BranchesPane).show_goal(goal_id)
        # Report text is produced by our reporter from agent output: render Markdown,
        # but strip escape and control characters first.
        self._report_text = plain(text)
        self._render_report()
        palette: Palette = goals_app(self).palette
        rows = [night_row(night, intent, run, palette) for intent, run in night.rows]
        self.query_one("#reports-night", KeyedTable).sync_rows(rows)
        tz = ZoneInfo(night.zone)
        self.query_one("#reports-night-box").border_subtitle = (
            f"{night.start.astimezone(tz):%a %H:%M} → {night.end.astimezone(tz):%a %H:%M} "
            f"{night.zone} · {len(rows)} runs"
        )
        self.query_one(TabBar).label("night", f"4 Night · {len(rows)} runs")

    @on(BranchesPane.Counted)
    def _branches_counted(self, event: BranchesPane.Counted) -> None:
        text = "3 Branches" + ("" if event.count is None else f" · {event.count}")
        self.query_one(TabBar).label("branches", text)

    def _render_report(self) -> None:
        """The report as Markdown, its tables too wide for the pane shown as lists."""
        width = self.query_one("#reports-doc").size.width - DOC_CHROME
        text = fit_tables(self._report_text, width if width > 0 else 80)
        if text != self._rendered:
            self._rendered = text
            self.query_one(Markdown).update(text)

    def on_resize(self, event: events.Resize) -> None:
        if self._report_text:
            self.call_after_refresh(self._render_report)
