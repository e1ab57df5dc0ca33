"""The main screen's common ground: its panes, its state, and the hooks its parts share.

The main screen is assembled from parts, one module each: the selection
(``main_selection``), the detail pane (``main_detail``), the filter (``main_filter``)
and the operator's actions (``main_actions``); ``main`` puts them together with the
layout and the handlers of the console's messages. Each part subclasses
:class:`PanesScreen`, which holds what they all read and names what they call on each
other.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget

from goalsui.tui.app_ref import ConsoleHost, goals_app
from goalsui.tui.model import Dashboard, PlanView
from goalsui.tui.notices import WorkerFailures
from goalsui.tui.selection import Selection
from goalsui.tui.widgets.detail import DetailBody, DetailView
from goalsui.tui.widgets.failed_pane import FailedTable
from goalsui.tui.widgets.goals_tree import GoalsTree
from goalsui.tui.widgets.threads_pane import ThreadsTable
from goalsui.tui.widgets.timeline import TimelineTable

PANES = ("goals", "threads", "timeline", "failed", "detail")
LOADING = "loading…"


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
        if pane == "detail":
            return self.query_one(DetailBody)
        return {
            "goals": self.goals,
            "threads": self.threads,
            "timeline": self.timeline,
            "failed": self.failed,
        }[pane]

    def pane_of(self, widget: Widget | None) -> str | None:
        node: Any = widget
        while node is not None and node is not self:
            node_id = getattr(node, "id", None) or ""
            if node_id.endswith("-pane") and node_id[:-5] in PANES:
                return node_id[:-5]
            node = node.parent
        return None

    def intent(self) -> Any:
        """The selected intent (of a worker, a run or itself), or None."""
        if self.dash is None or self.selection.intent_id is None:
            return None
        return self.dash.intents.get(self.selection.intent_id)

    def goal(self) -> Any:
        """The selected item's goal, or None."""
        if self.dash is None or self.selection.goal_id is None:
            return None
        return next((g for g in self.dash.goals if g.goal_id == self.selection.goal_id), None)

    # -- hooks: each is implemented by one part ------------------------------------------------
    def apply(self, dash: Dashboard) -> None:
        """Show ``dash`` in every pane (main)."""
        raise NotImplementedError

    def show_tab(self, name: str, *, focus: bool = False) -> None:
        """Show the narrow layout's tab ``name`` (main)."""
        raise NotImplementedError

    def refresh_keys(self) -> None:
        """Rebuild the footer if what decides the keys changed (main_selection)."""
        raise NotImplementedError

    def update_detail(self, *, force: bool = False) -> None:
        """Show the selection's tabs in the detail pane (main_detail)."""
        raise NotImplementedError

    def load_detail(self) -> Any:  # a worker
        """Read the current detail tab again (main_detail)."""
        raise NotImplementedError

    def load_costs(self, intent_id: int | None) -> Any:  # a worker
        """Read the cost panel's runs for ``intent_id`` (main_detail)."""
        raise NotImplementedError

    def action_open_output(self) -> None:
        """Open the selected run's output (main_actions)."""
        raise NotImplementedError
