"""Runs: every run, newest first by start, by view (all, running, failed) and goal; stop
a live run, retry a failed one, open its output."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, VerticalScroll
from textual.widgets import Static

from goalsui.domain.records import RunRecord
from goalsui.domain.states import ATTENTION_RUNS, RunStatus
from goalsui.domain.transitions import Action, run_allows
from goalsui.domain.untrusted import plain
from goalsui.tui import keys, run_actions
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import (
    RUN_GLYPH,
    Palette,
    clock_time,
    compact_time,
    duration,
    name_cell,
    one_line,
)
from goalsui.tui.screens.base import DataScreen
from goalsui.tui.widgets.failed_pane import run_error
from goalsui.tui.widgets.keyed_table import KeyedTable, Row

if TYPE_CHECKING:
    from goalsui.service import Service

#: How many runs the screen reads (newest first).
LIMIT = 500
VIEWS = ("all", RunStatus.RUNNING, RunStatus.FAILED)  # every run, the running, the failed

#: on the table (list keys; output and copy act on the screen) and on the screen
TABLE_KEYS = [*keys.LIST_NAV, keys.OUTPUT, keys.COPY]


@dataclass(frozen=True)
class RunRow:
    """One run with what the table shows of its intent."""

    run: RunRecord
    title: str
    goal_id: str | None


class RunsScreen(DataScreen[RunRow]):
    """The runs table above, the selected run's reason and output tail below."""

    COLUMNS = (
        ("started", "started", 11),
        ("status", "status", 11),
        ("run / intent", "intent", 22),
        ("took", "took", 6),
        ("reason", "reason", 10),
    )

    SAFE, ACTIONS = keys.RUNS_SCREEN[:2], keys.RUNS_SCREEN[2:]

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.view = "all"
        self.goal: str | None = None
        self.goals: list[str] = []
        self._all: list[RunRow] = []

    HEADING = "Runs"

    def panes(self) -> ComposeResult:
        with Container(id="runs-box", classes="pane") as box:
            box.border_title = "All runs (newest first)"
            table = KeyedTable(id="runs-table", flex_column="reason")
            keys.bind(table, TABLE_KEYS)
            yield table
        with VerticalScroll(id="runs-detail", classes="pane") as box:
            box.border_title = "Selected run"
            yield Static("", id="runs-text", markup=False)

    def fetch(self, service: Service) -> list[RunRow]:
        intents = {i.id: i for i in service.intents.list()}
        out = []
        for run in (r.record() for r in service.runs.list(limit=LIMIT)):
            intent = intents.get(run.intent_id)
            title = intent.title if intent is not None else f"intent {run.intent_id}"
            goal = intent.goal_id if intent is not None else None
            out.append(RunRow(run, title, goal))
        return out

    def show(self, data: list[RunRow]) -> None:
        self._all = data
        self.goals = sorted({row.goal_id for row in data if row.goal_id})
        self._sync()

    def _listed(self, row: RunRow) -> bool:
        status = str(row.run.status)
        if self.view == RunStatus.RUNNING and status != RunStatus.RUNNING:
            return False
        if self.view == RunStatus.FAILED and (status not in ATTENTION_RUNS or row.run.dismissed):
            return False
        return self.goal is None or row.goal_id == self.goal

    def _sync(self) -> None:
        self.show_items([row for row in self._all if self._listed(row)])
        goal = "all goals" if self.goal is None else self.goal.rsplit("-", 1)[0]
        box = self.query_one("#runs-box")
        box.border_title = f"Runs: {self.view} · {goal} (newest first)"
        box.border_subtitle = f"{len(self.row_items)} of {len(self._all)}"

    def row(self, item: RunRow, now: datetime, palette: Palette) -> Row:
        run = item.run
        status = "review" if run.needs_review else str(run.status)
        end = run.finished_at or (now if run.status == RunStatus.RUNNING else None)
        if str(run.status) in (RunStatus.MISSED, RunStatus.SKIPPED):
            end = None  # never ran: no duration
        return f"run:{run.id}", (
            Text(compact_time(run.started_at, now), style=palette.muted),
            Text(
                f"{RUN_GLYPH.get(str(run.status), '?')} {status}",
                style=f"bold {palette.run(str(run.status))}",
            ),
            Text(name_cell(f"{run.id} {item.title}", 22)),
            duration(run.started_at, end),
            Text(one_line(run_error(run), 200), style=palette.muted),
        )

    def describe(self) -> None:
        row = self.selected()
        text = Text()
        if row is None:
            text.append("No runs here. v: running / failed / all   f: goal", style="dim")
        else:
            run = row.run
            now = goals_app(self).clock()
            text.append(f"run {run.id}  {run.status}", style="bold")
            text.append(f"  {plain(row.title)}  ")
            text.append(f"started {clock_time(run.started_at, now)} ({run.trigger})", style="dim")
            text.append("\n")
            reason = run_error(run)
            if reason:
                text.append(plain(reason) + "\n")
            tail = (run.output_tail or "").strip()
            if tail:
                text.append("\n" + plain("\n".join(tail.splitlines()[-8:])) + "\n", style="dim")
        self.query_one("#runs-text", Static).update(text)
        self.refresh_bindings()  # stop and retry follow the selected run

    # -- keys -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("stop_run", "retry"):
            return True
        row = self.selected() if self.is_mounted else None
        if row is None:
            return False
        status = RunStatus.INTERRUPTED if row.run.needs_review else RunStatus(str(row.run.status))
        return run_allows(status, Action.STOP_RUN if action == "stop_run" else Action.RETRY)

    def action_cycle_view(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self._sync()

    def action_cycle_goal(self) -> None:
        order: list[str | None] = [None, *self.goals]
        index = order.index(self.goal) if self.goal in order else 0
        self.goal = order[(index + 1) % len(order)]
        self._sync()

    def action_stop_run(self) -> None:
        row = self.selected()
        if row is not None:
            run_actions.stop_run(self, row.run.id, row.title)

    def action_retry(self) -> None:
        row = self.selected()
        if row is not None:
            review = row.run.id if row.run.needs_review else None
            run_actions.retry(self, row.run.intent_id, row.title, review)

    def action_open_output(self) -> None:
        row = self.selected()
        if row is not None:
            goals_app(self).open_output(row.run.id, row.title)

    def action_copy_id(self) -> None:
        row = self.selected()
        if row is not None:
            goals_app(self).copy_id(f"run:{row.run.id}")
