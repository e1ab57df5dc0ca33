"""The main screen: Goals, Threads, Timeline, Failed runs and Detail, plus the status bar.

The screen owns the selection and turns keys into service calls (through the app, in
worker threads). It never reads the database itself: the app hands it dashboards.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, Label, Static, Tabs, Tree

from goalsui.domain.transitions import Action, intent_actions, intent_allows
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import RUN_GLYPH, clock_time, duration
from goalsui.tui.messages import DeliverMixin, deliver
from goalsui.tui.model import Dashboard, PlanView, goal_log_count, load_boxes
from goalsui.tui.selection import Selection, SelectionKind
from goalsui.tui.widgets.cost_panel import CostPanel, today_text
from goalsui.tui.widgets.detail import DetailBody, DetailTab, DetailView
from goalsui.tui.widgets.failed_pane import FailedTable, failure_items, run_error
from goalsui.tui.widgets.goals_tree import GoalsTree, NodeRef
from goalsui.tui.widgets.layout_tabs import NARROW_WIDTH, TAB_PANES, PaneTabs, tab_of
from goalsui.tui.widgets.notice_bar import NoticeBar
from goalsui.tui.widgets.status_bar import StatusBar, StatusInfo
from goalsui.tui.widgets.threads_pane import ThreadsTable
from goalsui.tui.widgets.timeline import TimelineTable

if TYPE_CHECKING:
    from goalsui.kb.watcher import KBChanges
    from goalsui.tui.app import GoalsApp

PANES = ("goals", "threads", "timeline", "failed", "detail")
PANE_TITLES = {
    "goals": "1 Goals",
    "threads": "2 Threads",
    "timeline": "3 Timeline",
    "failed": "4 Failed runs",
    "detail": "5 Detail",
}
LIVE_POLL_S = 0.5
DETAIL_TAIL_BYTES = 64 * 1024
LOADING = "loading…"
#: Actions that need the service (and the records): off until the records are loaded.
NEEDS_RECORDS = frozenset(
    {
        "pause",
        "run_now",
        "stop_run",
        "end_schedule",
        "retry",
        "dismiss",
        "edit",
        "add_todo",
        "toggle_todo",
        "open_output",
    }
)


class FilterBar(Horizontal):
    """``/``: filter the focused pane live; enter keeps it, escape clears it."""

    def compose(self) -> ComposeResult:
        yield Label("filter", id="filter-label")
        yield Input(placeholder="type to filter, enter to keep, escape to clear", id="filter-input")


class MainScreen(DeliverMixin, Screen[None]):
    """Five panes, a status bar at the top and the footer at the bottom."""

    BINDINGS: ClassVar[list[BindingType]] = [*keys.MAIN]  # replaces Screen's tab / shift+tab

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only
        self.selection = Selection()
        self.dash: Dashboard | None = None
        self.plan = PlanView()
        self.pane = "goals"
        self.tab = "goals"  # the narrow layout's tab
        self.filter_target: str | None = None
        self._live_timer: Any = None
        self._loading_boxes: set[str] = set()
        self._last_key_state: tuple[Any, ...] | None = None
        self._filter_mount: Any = None

    @property
    def gapp(self) -> GoalsApp:
        return goals_app(self)

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield NoticeBar()
        yield PaneTabs()
        with Horizontal(id="main-body"):
            with Vertical(id="left"):
                with Container(id="goals-pane", classes="pane"):
                    yield GoalsTree(read_only=self.read_only)
                    yield Static(
                        Text(
                            "No goals yet. Create one with\n"
                            "  goalsui goal create NAME --task TEXT --worker NAME=CRON\n"
                            "or add a goal folder to the KB: it appears here at once.",
                        ),
                        id="goals-empty",
                        classes="empty-hint",
                    )
                with Container(id="threads-pane", classes="pane"):
                    yield ThreadsTable(read_only=self.read_only)
            with Vertical(id="right"):
                with Container(id="timeline-pane", classes="pane"):
                    yield TimelineTable(read_only=self.read_only)
                with Container(id="failed-pane", classes="pane"):
                    yield FailedTable(read_only=self.read_only)
                    yield Static(
                        Text(
                            "Nothing failed. Failed, timed-out, interrupted and missed runs show here."
                        ),
                        id="failed-empty",
                        classes="empty-hint",
                    )
                with Container(id="detail-pane", classes="pane"):
                    yield DetailView(read_only=self.read_only)
        # the filter bar (hidden until '/') is mounted after the first frame
        yield Footer()

    def on_mount(self) -> None:
        for pane in PANES:
            self.query_one(f"#{pane}-pane").border_title = PANE_TITLES[pane]
            if pane != "detail":  # until the first dashboard arrives
                self.query_one(f"#{pane}-pane").border_subtitle = LOADING
        self.query_one("#goals-empty").display = False
        self.query_one("#failed-empty").display = False
        self.set_class(True, "-tab-goals")
        self.goals.focus()
        if self.gapp.notices:
            self.show_notice(self.gapp.notices[-1])
        else:
            self.query_one(NoticeBar).update(
                Text("no notifications yet · L: event log", style="dim")
            )
        self.gapp.main_mounted()

    def show_notice(self, notice: Any) -> None:
        """The newest alert, result or message, on the line under the status bar."""
        self.query_one(NoticeBar).show(notice, self.gapp.clock(), self.gapp.palette)

    def on_resize(self, event: Any) -> None:
        # Narrow terminals: the compact footer keeps every key of the pane on one line,
        # and tabs show fewer panes at a time instead of shrinking all of them.
        narrow = event.size.width < NARROW_WIDTH
        self.query_one(Footer).compact = narrow
        if narrow != self.has_class("-narrow"):
            self.set_class(narrow, "-narrow")
            if narrow:
                self.show_tab(tab_of(self.pane, self.tab), focus=True)

    def show_tab(self, name: str, *, focus: bool = False) -> None:
        """The narrow layout's tab ``name`` (its panes show; focus moves into it)."""
        self.tab = name
        for other in TAB_PANES:
            self.set_class(other == name, f"-tab-{other}")
        tabs = self.query_one(PaneTabs)
        if tabs.active != f"tab-{name}":
            tabs.active = f"tab-{name}"
        if focus and self.has_class("-narrow") and self.pane not in TAB_PANES[name]:
            self.call_after_refresh(self.pane_widget(TAB_PANES[name][0]).focus)

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        name = (event.tab.id or "tab-goals").removeprefix("tab-")
        if name != self.tab:
            self.show_tab(name, focus=True)

    def action_toggle_maximize(self) -> None:
        """Maximise the focused pane, or bring the layout back."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.pane_of(self.focused) or self.pane
        self.maximized = self.query_one(f"#{pane}-pane")

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

    # -- data ---------------------------------------------------------------------------------
    def apply(self, dash: Dashboard) -> None:
        """Show a fresh dashboard; tables update in place by key."""
        self.dash = dash
        app = self.gapp
        now, palette = app.clock(), app.palette
        with app.batch_update():
            self.goals.sync(dash, now, palette)
            self.query_one("#goals-empty").display = not dash.goals and not self.goals.filter_text
            self.threads.sync(dash.threads, palette)
            self.timeline.sync(dash, self.plan, now, palette)
            items = failure_items(dash.attention, dash.disabled, dash.intents)
            self.failed.sync(items, now, palette)
            empty = not items and not self.failed.filter_text and not dash.preview
            self.query_one("#failed-empty").display = empty
            self.failed.display = not empty
            self._subtitles(dash, len(items))
            self.update_status()
            self._reselect()
        if dash.preview:
            return
        self.load_costs(self.selection.intent_id)  # the selected intent's runs may have changed
        for goal_id, node in self.goals.goal_nodes.items():
            if node.is_expanded and goal_id not in self.goals.boxes:
                self.load_boxes(goal_id)
        self._ensure_live_poll()

    def apply_plan(self, plan: PlanView) -> None:
        self.plan = plan
        if self.dash is not None and not self.gapp.frozen:
            self.timeline.sync(self.dash, plan, self.gapp.clock(), self.gapp.palette)
            pane = self.query_one("#timeline-pane")
            pane.border_subtitle = self._timeline_subtitle(len(plan.overlaps))

    def _timeline_subtitle(self, overlaps: int) -> str:
        hours = int(self.timeline.span.total_seconds() // 3600)
        text = f"±{hours}h · ● ok ✗ failed ! missed ◆ next"
        if overlaps:
            text += f" · ▲ overlap predicted ({overlaps} intent{'s' if overlaps > 1 else ''})"
        if self.timeline.filter_text and self.dash is not None:
            total = len(self.timeline.shown_intents(self.dash, filtered=False))
            shown = self.timeline.row_count
            text = f"filter '{self.timeline.filter_text}' · {shown} of {total} intents · " + text
        return text

    def _subtitles(self, dash: Dashboard, failures: int) -> None:
        def counted(widget: Any, shown: int, total: int, noun: str) -> str:
            """``11 goals``, or ``filter 'x' · 3 of 11 goals`` while filtered."""
            if not widget.filter_text:
                return f"{total} {noun}"
            return f"filter '{widget.filter_text}' · {shown} of {total} {noun}"

        workers = sum(len(g.workers) for g in dash.goals)
        shown_goals = self.goals._visible_goals(dash)
        goals = counted(self.goals, len(shown_goals), len(dash.goals), "goals")
        if not self.goals.filter_text:
            goals += f" · {workers} workers"
        self.query_one("#goals-pane").border_subtitle = goals + (
            f" · from the KB, records {LOADING}" if dash.preview else ""
        )
        if dash.preview:
            for pane in ("threads", "timeline", "failed"):
                self.query_one(f"#{pane}-pane").border_subtitle = LOADING
            return
        open_todos = sum(t.open_count for t in dash.threads)
        shown_threads = sum(1 for k in self.threads.row_keys() if k.startswith("thread:"))
        threads = counted(self.threads, shown_threads, len(dash.threads), "threads")
        self.query_one("#threads-pane").border_subtitle = f"{threads} · {open_todos} open"
        self.query_one("#timeline-pane").border_subtitle = self._timeline_subtitle(
            len(self.plan.overlaps)
        )
        self.query_one("#failed-pane").border_subtitle = (
            counted(self.failed, len(self.failed.items), failures, "need you")
            if self.failed.filter_text
            else f"{failures} need you"
        )
        self.query_one(PaneTabs).counts(failures=failures, open_todos=open_todos)

    def tick(self, now: datetime) -> None:
        """Every second: countdowns, running timers, refresh age."""
        self.goals.tick(now)
        self.timeline.tick(now)
        self.update_status()

    def update_status(self) -> None:
        app = self.gapp
        dash = self.dash
        summary = dash.summary if dash else {}
        info = StatusInfo(
            scheduler=app.scheduler_state,
            running=len(dash.running) if dash else 0,
            due=int(summary.get("due", 0) or 0),
            failed=len(dash.attention) + len(dash.disabled) if dash else 0,
            goal_errors=int(summary.get("goal_errors", 0) or 0),
            refreshed_s=app.refresh_age(),
            filter=self._filter_summary(),
            frozen=app.frozen,
            read_only=self.read_only,
            watcher=app.watcher_status(),
            loading=dash is None or dash.preview,
            today=today_text(dash.spend_today) if dash else "",
        )
        self.query_one(StatusBar).show(info, app.palette)

    def _filter_summary(self) -> str:
        parts = []
        for pane in ("goals", "threads", "timeline", "failed"):
            text = getattr(self.pane_widget(pane), "filter_text", "")
            if text:
                parts.append(f"{pane}:'{text}'")
        return " ".join(parts)

    # -- selection ------------------------------------------------------------------------------
    def on_descendant_focus(self, event: Any) -> None:
        pane = self.pane_of(event.widget)
        if pane is None or pane == self.pane:
            return
        self.pane = pane
        if self.has_class("-narrow") and pane not in TAB_PANES[self.tab]:
            self.show_tab(tab_of(pane, self.tab))
        if pane != "detail":
            self._select_from(pane)

    @on(Tree.NodeHighlighted, "#goals")
    def _tree_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        if self.pane == "goals" or self.selection.kind == SelectionKind.NONE:
            self._select_from("goals")

    @on(Tree.NodeExpanded, "#goals")
    def _tree_expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        ref = event.node.data
        if ref is not None and ref.kind == "goal" and self.dash is not None:
            goal = next((g for g in self.dash.goals if g.goal_id == ref.goal_id), None)
            if goal is not None:
                self.goals._sync_children(event.node, goal)
                self.goals.tick(self.gapp.clock())
                self.load_boxes(ref.goal_id)

    @on(Tree.NodeSelected, "#goals")
    def _tree_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        ref = event.node.data
        if ref is not None and ref.kind in ("runs",):
            self.action_open_output()

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        pane = self.pane_of(event.data_table)
        if pane is not None and (pane == self.pane or self.selection.kind == SelectionKind.NONE):
            self._select_from(pane)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        pane = self.pane_of(event.data_table)
        if pane in ("timeline", "failed"):
            self.action_open_output()
        elif pane == "threads" and not self.read_only and self.selection.kind == SelectionKind.TODO:
            self.action_toggle_todo()

    def _select_from(self, pane: str) -> None:
        sel = self._selection_for(pane)
        if sel != self.selection:
            self.selection = sel
            if sel.kind == SelectionKind.OUTBOX:
                self.goals.mark_seen(NodeRef("outbox", sel.goal_id or "", sel.worker))
            self._refresh_keys()
            self.update_detail()

    def _key_state(self) -> tuple[Any, ...]:
        """What decides which keys apply (the footer is rebuilt only when it changes)."""
        intent = self._intent()
        goal = self._goal() if self.selection.kind == SelectionKind.GOAL else None
        last = (
            self.dash.last_run(intent.id) if self.dash is not None and intent is not None else None
        )
        return (
            self.selection,
            intent.status if intent is not None else None,
            intent.consecutive_failures if intent is not None else None,
            last.status if last is not None else None,
            tuple(w.status for w in goal.workers) if goal is not None else None,
            self.detail.current if self.is_mounted else None,
        )

    def _refresh_keys(self) -> None:
        state = self._key_state()
        if state != self._last_key_state:
            self._last_key_state = state
            self.refresh_bindings()

    def _reselect(self) -> None:
        """After a refresh: the same item, with fresh facts (its run, its status)."""
        pane = self.selection.pane or self.pane
        if pane not in PANES or pane == "detail":
            pane = "goals"
        sel = self._selection_for(pane)
        changed = sel != self.selection
        self.selection = sel
        self._refresh_keys()
        # Records shown in the detail (a thread, a run) may have changed with the refresh;
        # KB files are re-read on watcher events instead.
        tab = self.detail.current
        self.update_detail(force=changed or bool(tab and (tab.thread_id or tab.run_id)))

    def _selection_for(self, pane: str) -> Selection:
        dash = self.dash
        if pane == "goals":
            ref = self.goals.selected_ref
            if ref is None:
                return Selection(pane=pane)
            intent_id = ref.intent_id  # a goal-level intent's node
            if ref.worker and dash is not None:
                intent = dash.intent_of(ref.goal_id, ref.worker)
                intent_id = intent.id if intent else None
            run = dash.last_run(intent_id) if dash else None
            live = dash.running.get(intent_id or -1) if dash else None
            shown = live or run
            return Selection(
                kind=SelectionKind(ref.kind),
                pane=pane,
                goal_id=ref.goal_id,
                worker=ref.worker,
                intent_id=intent_id,
                run_id=shown.id if shown else None,
            )
        if pane == "threads":
            picked = self.threads.selected()
            if picked is None:
                return Selection(pane=pane)
            kind, thread_id, todo_id = picked
            return Selection(
                kind=SelectionKind(kind), pane=pane, thread_id=thread_id, todo_id=todo_id
            )
        if pane == "timeline":
            intent_id = self.timeline.selected_intent()
            if intent_id is None or dash is None:
                return Selection(pane=pane)
            intent = dash.intents.get(intent_id)
            live = dash.running.get(intent_id)
            run = live or dash.last_run(intent_id)
            return Selection(
                kind=SelectionKind.INTENT,
                pane=pane,
                goal_id=intent.goal_id if intent else None,
                worker=intent.worker if intent else None,
                intent_id=intent_id,
                run_id=run.id if run else None,
            )
        if pane == "failed":
            item = self.failed.selected_item()
            if item is None:
                return Selection(pane=pane)
            intent = dash.intents.get(item.intent_id) if dash else None
            return Selection(
                kind=SelectionKind.RUN if item.run_id else SelectionKind.INTENT,
                pane=pane,
                goal_id=intent.goal_id if intent else None,
                worker=intent.worker if intent else None,
                intent_id=item.intent_id,
                run_id=item.run_id,
            )
        return replace(self.selection)

    # -- detail ----------------------------------------------------------------------------------
    def detail_tabs(self, sel: Selection) -> tuple[str, list[DetailTab]]:
        dash = self.dash
        goal = (
            next((g for g in dash.goals if g.goal_id == sel.goal_id), None)
            if dash and sel.goal_id
            else None
        )
        intent = dash.intents.get(sel.intent_id) if dash and sel.intent_id else None
        tabs: list[DetailTab] = []
        if sel.kind == SelectionKind.GOAL and goal is not None:
            if goal.error:
                tabs.append(DetailTab("⚠ KB error", text=_problems_text(goal.error)))
            tabs += [
                DetailTab("protocol.md", goal.goal_id, "protocol.md"),
                DetailTab("state.yaml", goal.goal_id, "state.yaml"),
                DetailTab("definition.yaml", goal.goal_id, "definition.yaml"),
            ]
            return f"goal {goal.goal_id} · {goal.path}", tabs
        if sel.kind in (SelectionKind.INBOX, SelectionKind.OUTBOX) and sel.goal_id and sel.worker:
            rel = f"workers/{sel.worker}/{sel.kind}"
            return f"{sel.goal_id}/{rel}", [DetailTab(sel.kind, sel.goal_id, rel)]
        if sel.kind == SelectionKind.GOAL_LOG and sel.goal_id:
            return f"{sel.goal_id}/log", [DetailTab("log", sel.goal_id, "log")]
        if sel.kind == SelectionKind.RUNS and dash is not None:
            runs = list(reversed(dash.recent.get(sel.intent_id or -1, [])))[:6]
            for run in runs:
                tabs.append(
                    DetailTab(f"run {run.id} {RUN_GLYPH.get(run.status, '?')}", run_id=run.id)
                )
            if not tabs:
                tabs.append(DetailTab("runs", text="No runs in the last 24 h."))
            return f"runs of {sel.goal_id}/{sel.worker}", tabs
        if sel.kind in (SelectionKind.WORKER, SelectionKind.INTENT, SelectionKind.RUN) and (
            sel.worker or intent is not None or sel.run_id
        ):
            title = ""
            if sel.kind == SelectionKind.RUN and sel.run_id:
                tabs.append(DetailTab(f"run {sel.run_id} output", run_id=sel.run_id))
            if intent is not None and intent.status == "failed":
                tabs.append(
                    DetailTab(
                        "⚠ disabled",
                        text=f"Auto-disabled after repeated failures.\n\nLast error:\n{intent.last_error or '-'}",
                    )
                )
            if sel.goal_id and sel.worker:
                title = f"worker {sel.goal_id}/{sel.worker}"
                tabs.append(DetailTab("prompt.md", sel.goal_id, f"workers/{sel.worker}/prompt.md"))
                tabs.append(
                    DetailTab(
                        "definition.yaml", sel.goal_id, f"workers/{sel.worker}/definition.yaml"
                    )
                )
            elif intent is not None:
                title = f"intent {intent.id} · {intent.title}"
                tabs.append(DetailTab("instruction", text=_intent_text(intent)))
                if intent.checklist:
                    tabs.append(DetailTab("checklist", text=intent.checklist))
            if sel.kind != SelectionKind.RUN and sel.run_id:
                live = dash is not None and sel.intent_id in dash.running
                tabs.append(
                    DetailTab("▶ live output" if live else "last output", run_id=sel.run_id)
                )
            return title or f"run {sel.run_id}", tabs
        if sel.kind in (SelectionKind.THREAD, SelectionKind.TODO) and sel.thread_id:
            thread = (
                next((t for t in dash.threads if t.thread.id == sel.thread_id), None)
                if dash
                else None
            )
            title = (
                f"thread {sel.thread_id} · {thread.thread.title}"
                if thread
                else f"thread {sel.thread_id}"
            )
            return title, [DetailTab("checklist and messages", thread_id=sel.thread_id)]
        return "", [DetailTab("help", text=_WELCOME)]

    def update_detail(self, *, force: bool = False) -> None:
        if not self.is_mounted:
            return
        title, tabs = self.detail_tabs(self.selection)
        changed = self.detail.set_tabs(title, tabs)
        if changed or force:
            self.load_detail()
            self.load_costs(self.selection.intent_id)
        self._ensure_live_poll()

    @work(thread=True, exclusive=True, group="costs", exit_on_error=False)
    def load_costs(self, intent_id: int | None) -> None:
        """The selected intent's last runs for the cost panel (off the UI thread)."""
        points = None
        if intent_id is not None and self.gapp.service_ready:
            try:
                points = self.gapp.service.costs.recent_runs(intent_id)
            except GoalsuiError:
                points = None
        deliver(self, self.query_one(CostPanel).show, intent_id, points)

    @on(DetailView.TabChanged)
    def _tab_changed(self) -> None:
        self._refresh_keys()
        self.load_detail()

    def _current_live(self) -> bool:
        tab = self.detail.current
        return bool(
            tab
            and tab.run_id
            and self.dash
            and any(r.id == tab.run_id for r in self.dash.running.values())
        )

    def _ensure_live_poll(self) -> None:
        live = self._current_live()
        if live and self._live_timer is None:
            self._live_timer = self.set_interval(LIVE_POLL_S, self.load_detail)
        elif not live and self._live_timer is not None:
            self._live_timer.stop()
            self._live_timer = None

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self) -> None:
        tab = self.detail.current
        if tab is None:
            return
        service = self.gapp.service
        if not self.gapp.service_ready and tab.text is None:
            deliver(self, self._show_detail, tab, LOADING, False)
            return
        follow = False
        try:
            if tab.run_id is not None:
                run = service.get_run(tab.run_id)
                body = service.run_output(tab.run_id, tail_bytes=DETAIL_TAIL_BYTES)
                empty = "(no output yet)" if run.status == "running" else "(no output)"
                text = _run_header(run, self.gapp.clock()) + (body or empty)
                follow = True
            elif tab.thread_id is not None:
                text = _thread_text(service, tab.thread_id)
            elif tab.text is not None:
                text = tab.text
            elif tab.goal_id is not None and tab.rel is not None:
                text = _read_kb(service, tab.goal_id, tab.rel)
            else:
                text = ""
        except GoalsuiError as exc:
            text = f"(cannot show this: {exc})"
        deliver(self, self._show_detail, tab, text, follow)

    def _show_detail(self, tab: DetailTab, text: str, follow: bool) -> None:
        if tab != self.detail.current:
            return
        self.detail.set_body(tab, text, follow=follow)
        self.gapp.detail_shown(tab, text)
        self._ensure_live_poll()

    def kb_changed(self, batch: KBChanges) -> None:
        """A watcher batch: reload what shows the changed files."""
        tab = self.detail.current
        if tab is not None and tab.goal_id is not None and tab.rel is not None:
            for goal_id, rel in batch.files:
                if goal_id == tab.goal_id and (rel == tab.rel or rel.startswith(tab.rel + "/")):
                    self.load_detail()
                    break
        counted = {c.goal_id for c in batch.changes if c.kind in ("box", "log") and c.goal_id}
        for goal_id in counted:
            node = self.goals.goal_nodes.get(goal_id)
            if node is not None and node.is_expanded:
                self.load_boxes(goal_id)

    @work(thread=True, group="boxes", exit_on_error=False)
    def load_boxes(self, goal_id: str) -> None:
        dash = self.dash
        goal = next((g for g in dash.goals if g.goal_id == goal_id), None) if dash else None
        if goal is None:
            return
        try:
            boxes = load_boxes(self.gapp.service, goal)
            _, count = goal_log_count(self.gapp.service, goal_id)
        except GoalsuiError:
            return
        deliver(self, self._show_boxes, goal_id, boxes, count)

    def _show_boxes(self, goal_id: str, boxes: Any, count: int) -> None:
        self.goals.set_boxes(goal_id, boxes, count)
        if not self.gapp.frozen:
            self.goals.tick(self.gapp.clock())

    # -- panes and filter ---------------------------------------------------------------------------
    def action_focus_pane(self, pane: str) -> None:
        if self.maximized is not None:
            self.minimize()
        if self.has_class("-narrow"):
            self.show_tab(tab_of(pane, self.tab))
        self.pane_widget(pane).focus()

    def mount_filter_bar(self) -> Any:
        """Mount the (hidden) filter bar once; awaitable until its parts are in place."""
        if self._filter_mount is None:
            footer = self.query_one(Footer)
            self._filter_mount = self.mount(FilterBar(id="filter-bar"), before=footer)
        return self._filter_mount

    async def action_filter(self) -> None:
        await self.mount_filter_bar()
        target = self.pane if self.pane != "detail" else "goals"
        self.filter_target = target
        bar = self.query_one(FilterBar)
        bar.display = True
        bar.query_one(Label).update(f"filter {target}:")
        field = bar.query_one(Input)
        field.value = getattr(self.pane_widget(target), "filter_text", "")
        # Focus now, not on the next loop turn: keys typed right after '/' go to the field.
        self.set_focus(field)

    @on(Input.Changed, "#filter-input")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self.filter_target is not None:
            self.set_filter(self.filter_target, event.value.strip())

    @on(Input.Submitted, "#filter-input")
    def _filter_submitted(self) -> None:
        self._close_filter()

    def _close_filter(self) -> None:
        bar = self.query_one(FilterBar)
        target = self.filter_target or "goals"
        self.filter_target = None
        self.set_focus(self.pane_widget(target))
        bar.display = False

    def set_filter(self, pane: str, text: str) -> None:
        widget = self.pane_widget(pane)
        widget.filter_text = text  # type: ignore[attr-defined]  # every pane widget filters
        if self.dash is not None:
            self.apply(self.dash)

    def action_clear_filter(self) -> None:
        if self.filter_target is not None:
            self.set_filter(self.filter_target, "")
            self._close_filter()
            return
        pane = self.pane if self.pane != "detail" else "goals"
        if getattr(self.pane_widget(pane), "filter_text", ""):
            self.set_filter(pane, "")

    def on_key(self, event: Any) -> None:
        if event.key == "escape" and self.filter_target is not None:
            event.stop()
            self.action_clear_filter()

    def action_open_screen(self, name: str) -> None:
        self.gapp.open_screen(name)

    # -- actions ------------------------------------------------------------------------------------
    def _intent(self) -> Any:
        if self.dash is None or self.selection.intent_id is None:
            return None
        return self.dash.intents.get(self.selection.intent_id)

    def _goal(self) -> Any:
        if self.dash is None or self.selection.goal_id is None:
            return None
        return next((g for g in self.dash.goals if g.goal_id == self.selection.goal_id), None)

    def _edit_target(self) -> tuple[str, str] | None:
        tab = self.detail.current
        if (
            tab is not None
            and tab.editable
            and tab.rel
            and not tab.rel.endswith(("inbox", "outbox", "log"))
        ):
            return tab.goal_id, tab.rel  # type: ignore[return-value]  # an editable tab has a goal
        sel = self.selection
        if sel.kind == SelectionKind.GOAL and sel.goal_id:
            return sel.goal_id, "protocol.md"
        if sel.goal_id and sel.worker:
            return sel.goal_id, f"workers/{sel.worker}/prompt.md"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in NEEDS_RECORDS and not self.gapp.service_ready:
            return False
        sel = self.selection
        intent = self._intent()
        if action == "pause":
            if sel.kind == SelectionKind.GOAL:
                return self._goal() is not None
            return intent is not None and bool(
                intent_actions(intent.status, pause_pending=_pause_pending(intent))
                & {Action.PAUSE, Action.RESUME, Action.REINSTATE}
            )
        if action == "run_now":
            if sel.kind == SelectionKind.GOAL:
                goal = self._goal()
                return goal is not None and any(w.status == "active" for w in goal.workers)
            return intent is not None and intent_allows(intent.status, Action.RUN_NOW)
        if action == "stop_run":
            return self._running_run() is not None
        if action == "end_schedule":
            return (
                sel.kind != SelectionKind.GOAL
                and intent is not None
                and intent_allows(intent.status, Action.END_SCHEDULE)
            )
        if action == "retry":
            if (
                sel.kind == SelectionKind.GOAL
                or intent is None
                or not intent_allows(intent.status, Action.RETRY)
            ):
                return False
            last = self.dash.last_run(intent.id) if self.dash else None
            failing = last is not None and last.status in (
                "failed",
                "timeout",
                "interrupted",
                "missed",
            )
            return intent.status == "failed" or intent.consecutive_failures > 0 or failing
        if action == "dismiss":
            return sel.kind == SelectionKind.RUN and sel.run_id is not None
        if action == "edit":
            return self._edit_target() is not None
        if action == "add_todo":
            return (
                sel.kind in (SelectionKind.THREAD, SelectionKind.TODO) and sel.thread_id is not None
            )
        if action == "toggle_todo":
            return sel.kind == SelectionKind.TODO
        if action == "open_output":
            tab = self.detail.current if self.is_mounted else None
            return sel.run_id is not None or bool(tab and tab.run_id)
        return True

    def action_pause(self) -> None:
        app, sel = self.gapp, self.selection
        if sel.kind == SelectionKind.GOAL:
            goal = self._goal()
            if goal is None:
                return
            if goal.status == "paused":
                app.act(f"Resumed goal {goal.name}", app.service.resume_goal, goal.goal_id)
            else:
                app.act(f"Paused goal {goal.name}", app.service.pause_goal, goal.goal_id)
            return
        intent = self._intent()
        if intent is None:
            return
        if intent.status == "cancelled":
            app.act(f"Reinstated {intent.title}", app.service.resume_intent, intent.id)
            return
        resume = intent.status in ("paused", "failed") or _pause_pending(intent)
        if resume:
            app.act(f"Resumed {intent.title}", app.service.resume_intent, intent.id)
        else:
            app.act(f"Paused {intent.title}", app.service.pause_intent, intent.id)

    def action_run_now(self) -> None:
        app, sel = self.gapp, self.selection
        if sel.kind == SelectionKind.GOAL:
            goal = self._goal()
            if goal is None:
                return
            ids = [w.intent_id for w in goal.workers if w.status == "active" and w.intent_id]

            def run_all() -> None:
                for intent_id in ids:
                    app.service.run_intent_now(intent_id)

            what = f"{len(ids)} worker{'s' if len(ids) != 1 else ''} of {goal.name}"

            def answered(yes: bool | None) -> None:
                if yes:
                    app.act(f"Run now: {what}", run_all)

            from goalsui.tui.screens.modals import ConfirmScreen

            app.push_screen(
                ConfirmScreen(
                    f"Run all {what} now?",
                    "Each active worker of the goal fires once, now; their schedules stay.",
                    yes="Run them",
                    no="Cancel",
                ),
                answered,
            )
            return
        intent = self._intent()
        if intent is not None:
            app.act(f"Run now: {intent.title}", app.service.run_intent_now, intent.id)

    def _running_run(self) -> Any:
        """The selected intent's run while it runs (what ``x`` stops), else None."""
        intent = self._intent()
        if intent is None or self.dash is None or self.selection.kind == SelectionKind.GOAL:
            return None
        return self.dash.running.get(intent.id)

    def action_stop_run(self) -> None:
        from goalsui.tui.screens.modals import ConfirmScreen

        intent, run = self._intent(), self._running_run()
        if intent is None or run is None:
            return
        app = self.gapp
        detail = (
            f"Run {run.id} is stopped (SIGTERM, then SIGKILL) and recorded cancelled. "
            "The schedule goes on: the next run fires as planned."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                app.act(f"Stopping run {run.id} of {intent.title}", app.service.stop_run, run.id)

        app.push_screen(
            ConfirmScreen(
                f"Stop run {run.id} of '{intent.title}'?",
                detail,
                yes="Stop it",
                no="Keep it running",
            ),
            answered,
        )

    def action_end_schedule(self) -> None:
        from goalsui.tui.screens.modals import ConfirmScreen

        intent = self._intent()
        if intent is None:
            return
        app = self.gapp
        live = self.dash is not None and intent.id in self.dash.running
        detail = "It will not fire again until it is reinstated (p here, or goalsui intent resume)."
        if live:
            detail = "Its running process is stopped (SIGTERM, then SIGKILL). " + detail

        def answered(yes: bool | None) -> None:
            if yes:
                app.act(
                    f"Ended the schedule of {intent.title}", app.service.cancel_intent, intent.id
                )

        app.push_screen(
            ConfirmScreen(
                f"End the schedule of '{intent.title}'?", detail, yes="End it", no="Keep it"
            ),
            answered,
        )

    def action_retry(self) -> None:
        intent = self._intent()
        if intent is not None:
            self.gapp.act(f"Retrying {intent.title}", self.gapp.service.retry_intent, intent.id)

    def action_dismiss(self) -> None:  # type: ignore[override]  # the 'dismiss run' key
        if self.selection.run_id is not None:
            self.gapp.act(
                f"Dismissed run {self.selection.run_id}",
                self.gapp.service.dismiss_run,
                self.selection.run_id,
            )

    def action_edit(self) -> None:
        target = self._edit_target()
        if target is not None:
            self.gapp.edit_file(*target)

    def action_add_todo(self) -> None:
        from goalsui.tui.screens.modals import TextInputScreen

        thread_id = self.selection.thread_id
        if thread_id is None:
            return
        app = self.gapp

        def added(text: str | None) -> None:
            if text:
                app.act(f"Added: {text}", app.service.add_todo, thread_id, text)

        app.push_screen(
            TextInputScreen(f"New todo in thread {thread_id}", "what needs doing?"), added
        )

    def action_toggle_todo(self) -> None:
        sel = self.selection
        if (
            sel.kind != SelectionKind.TODO
            or sel.thread_id is None
            or sel.todo_id is None
            or self.dash is None
        ):
            return
        todo = next(
            (t for view in self.dash.threads for t in view.todos if t.id == sel.todo_id),
            None,
        )
        if todo is None:
            return
        app = self.gapp
        if todo.done:
            app.act(f"Reopened: {todo.text}", app.service.reopen_todo, sel.thread_id, sel.todo_id)
        else:
            app.act(f"Done: {todo.text}", app.service.complete_todo, sel.thread_id, sel.todo_id)

    def action_open_output(self) -> None:
        tab = self.detail.current
        run_id = self.selection.run_id
        if self.pane == "detail" and tab is not None and tab.run_id:
            run_id = tab.run_id
        if run_id is None:
            self.notify("No run to show here yet", severity="warning", timeout=3)
            return
        intent = self._intent()
        self.gapp.open_output(run_id, intent.title if intent else "")

    def action_copy_id(self) -> None:
        sel = self.selection
        value = {
            "goal": sel.goal_id,
            "worker": f"{sel.goal_id}/{sel.worker}",
            "intent": str(sel.intent_id),
            "run": str(sel.run_id),
            "thread": str(sel.thread_id),
            "todo": str(sel.todo_id),
        }.get(sel.kind)
        if value:
            self.gapp.copy_id(value)


_WELCOME = """Select a goal, worker, intent, run or todo to see its files here.

Keys: tab / 1-5 move between panes · / filter · ? help · ctrl+p every command.
On a worker or intent: p pause/resume/reinstate · r run now · x stop the running run
X end the schedule · R retry · e edit · o output.
"""


def _pause_pending(intent: Any) -> bool:
    """A pause was asked while the intent fires (it pauses after its run)."""
    return intent.status == "firing" and intent.pending_trigger in ("pause", "pause+stop")


def _problems_text(error: str) -> str:
    lines = [p.strip() for p in error.split("; ") if p.strip()]
    return (
        "This goal has files that fail validation. The last good version keeps running;\n"
        "fix the file and it is picked up at once.\n\n" + "\n".join(f"• {line}" for line in lines)
    )


def _intent_text(intent: Any) -> str:
    from goalsui.tui.fmt import describe_schedule

    lines = [
        f"{intent.title}",
        f"kind {intent.kind} · {describe_schedule(intent.kind, intent.schedule, intent.timezone)} · status {intent.status}",
        f"fires {intent.fires}" + (f" of {intent.max_fires}" if intent.max_fires else ""),
    ]
    if intent.event_source:
        lines.append(f"event source {intent.event_source} filter {intent.event_filter or {}}")
    if intent.last_error:
        lines.append(f"last error: {intent.last_error}")
    lines += ["", intent.instruction or "(no instruction)"]
    return "\n".join(lines)


def _run_header(run: Any, now: datetime) -> str:
    parts = [
        f"run {run.id} · {run.status} · trigger {run.trigger} · started {clock_time(run.started_at, now)}"
    ]
    if run.finished_at:
        parts.append(f"took {duration(run.started_at, run.finished_at)}")
    if run.exit_code is not None:
        parts.append(f"exit {run.exit_code}")
    header = " · ".join(parts)
    error = (
        run_error(run)
        if run.status in ("failed", "timeout", "interrupted", "missed", "skipped")
        else ""
    )
    if error:
        header += f"\nreason: {error}"
    return header + "\n" + "─" * 40 + "\n"


def _read_kb(service: Any, goal_id: str, rel: str) -> str:
    """A file's text; for a folder, its listing (newest first) and the newest file."""
    path = service.kb_path(goal_id, rel)
    if not path.is_dir():
        text: str = service.kb_read(goal_id, rel)
        return text
    entries = [
        e for e in service.kb_list(goal_id, rel) if not e["dir"] and not e["name"].startswith(".")
    ]
    entries.sort(key=lambda e: (e["modified"], e["name"]), reverse=True)
    if not entries:
        return f"{goal_id}/{rel} is empty."
    lines = [f"{len(entries)} file{'s' if len(entries) != 1 else ''}, newest first:"]
    for e in entries[:20]:
        lines.append(
            f"  {e['modified'].astimezone():%Y-%m-%d %H:%M:%S}  {e['size']:>7}  {e['name']}"
        )
    newest = entries[0]
    lines += ["", f"── {newest['name']} " + "─" * 20]
    try:
        lines.append(service.kb_read(goal_id, newest["path"]))
    except GoalsuiError as exc:
        lines.append(f"(cannot read: {exc})")
    return "\n".join(lines)


def _thread_text(service: Any, thread_id: int) -> str:
    thread = service.get_thread(thread_id)
    todos = service.list_todos(thread_id)
    messages = service.messages(thread_id, limit=30)
    lines = [f"{thread.title}{'  (private)' if thread.private else ''}", ""]
    for todo in todos:
        lines.append(f"  [{'x' if todo.done else ' '}] {todo.text}")
    lines += ["", f"── last {len(messages)} messages (T: all threads) " + "─" * 10]
    for m in messages:
        lines.append(f"{m.role} · {m.created_at.astimezone():%Y-%m-%d %H:%M}")
        if m.provenance:
            lines.append(f"↩ {m.provenance}")
        lines.append(plain(m.content).rstrip())
        lines.append("")
    return "\n".join(lines)
