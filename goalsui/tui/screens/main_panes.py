"""The main screen's common ground: its panes, its state (what the keys act on: the
selection), and what its parts (selection, detail, filter, actions; ``main`` puts them
together) call on each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from textual.screen import Screen
from textual.widget import Widget

from goalsui.tui.app_ref import ConsoleHost, goals_app
from goalsui.tui.model import Dashboard, PlanView
from goalsui.tui.notices import WorkerFailures
from goalsui.tui.widgets.detail import DetailBody, DetailView
from goalsui.tui.widgets.failed_pane import FailedTable
from goalsui.tui.widgets.goals_tree import GoalsTree
from goalsui.tui.widgets.threads_pane import ThreadsTable
from goalsui.tui.widgets.timeline import TimelineTable

PANES = ("goals", "threads", "timeline", "failed", "detail")
LOADING = "loading…"


class SelectionKind(StrEnum):
    """The kind of item selected (a ``StrEnum``: equal to the tree's and tables' kind strings)."""

    NONE = "none"
    GOAL = "goal"
    WORKER = "worker"
    INBOX = "inbox"
    OUTBOX = "outbox"
    RUNS = "runs"
    GOAL_LOG = "goal-log"
    INTENT = "intent"
    RUN = "run"
    THREAD = "thread"
    TODO = "todo"


@dataclass(frozen=True)
class Selection:
    """What the keys act on: the item under the cursor of the focused pane."""

    kind: SelectionKind = SelectionKind.NONE
    pane: str = ""
    goal_id: str | None = None
    worker: str | None = None
    intent_id: int | None = None
    run_id: int | None = None
    thread_id: int | None = None
    todo_id: int | None = None


class PanesScreen(WorkerFailures, Screen[None]):
    """The five panes, the selection and the records shown; overridden hooks below."""

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only
        self.selection = Selection()
        #: the dashboard shown (None until the first one arrives)
        self.dash: Dashboard | None = None
        self.plan = PlanView()
        self.pane = "goals"
        self.tab = "goals"  # the narrow layout's tab

    @property
    def gapp(self) -> ConsoleHost:
        return goals_app(self)

    @property
    def goals(self) -> GoalsTree:
        return self.query_one(GoalsTree)

    @property
    def threads(self) -> ThreadsTable:
        return self.query_one(ThreadsTable)

    @property
    def timeline(self) -> TimelineTable:
        return self.query_one(TimelineTable)

    @property
    def failed(self) -> FailedTable:
        return self.query_one(FailedTable)

    @property
    def detail(self) -> DetailView:
        return self.query_one(DetailView)

    def pane_widget(self, pane: str) -> Widget:
        """The widget that has the focus in ``pane`` (each list's id is its pane's name)."""
        return self.query_one(DetailBody) if pane == "detail" else self.query_one(f"#{pane}")

    def pane_of(self, widget: Widget | None) -> str | None:
        ids = [node.id for node in widget.ancestors_with_self if node.id] if widget else []
        return next((i[:-5] for i in ids if i.endswith("-pane") and i[:-5] in PANES), None)

    def intent(self) -> Any:
        """The selected intent (of a worker, a run or itself), or None."""
        return self.dash.intents.get(self.selection.intent_id or -1) if self.dash else None

    def goal(self) -> Any:
        """The selected item's goal, or None."""
        return self.dash.goal(self.selection.goal_id) if self.dash else None

    # -- what the parts call on each other, each implemented by one part -----------------------
    apply: Callable[[Dashboard], None]  # main: show a dashboard in every pane
    show_tab: Callable[..., None]  # main: the narrow layout's tab (name, focus=False)
    refresh_keys: Callable[[], None]  # main_selection: rebuild the footer if its keys changed
    update_detail: Callable[..., None]  # main_detail: the selection's tabs (force=False)
    load_detail: Callable[[], Any]  # main_detail (a worker): read the current tab again
    load_costs: Callable[[int | None], Any]  # main_detail (a worker): the cost panel's runs
    action_open_output: Callable[[], None]  # main_actions: the selected run's output
