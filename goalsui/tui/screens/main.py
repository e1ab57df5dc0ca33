"""The main screen: Goals, Threads, Timeline, Failed runs and Detail, plus the status bar.
It wires the panes and its parts; the records come as messages, never by a call."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import Static

from goalsui.domain.states import IntentStatus
from goalsui.tui import keys
from goalsui.tui.idle import next_visible_change
from goalsui.tui.messages import (
    DashboardReady,
    DashboardShown,
    DisplayFrozen,
    MainMounted,
    PaletteChanged,
    PlanReady,
    RecordsOnScreen,
    ServiceOpened,
    ShowGoal,
    Tick,
)
from goalsui.tui.model import Dashboard
from goalsui.tui.notices import NoticeAdded
from goalsui.tui.screens.main_actions import ActionsPart
from goalsui.tui.screens.main_detail import DetailPart
from goalsui.tui.screens.main_filter import FilterPart
from goalsui.tui.screens.main_panes import LOADING, PANES
from goalsui.tui.screens.main_selection import SelectionPart
from goalsui.tui.widgets.cost_panel import today_text
from goalsui.tui.widgets.detail import DetailView
from goalsui.tui.widgets.failed_pane import FailedTable, failure_items
from goalsui.tui.widgets.footer import Footer
from goalsui.tui.widgets.goals_tree import GoalsTree
from goalsui.tui.widgets.layout_tabs import NARROW_WIDTH, TAB_LABELS, TAB_PANES, tab_of
from goalsui.tui.widgets.status_bar import NoticeBar, StatusBar, StatusInfo
from goalsui.tui.widgets.threads_pane import ThreadsTable
from goalsui.tui.widgets.timeline import TimelineTable

if TYPE_CHECKING:
    from textual.widgets import Tabs

    from goalsui.tui.widgets.tab_bar import TabBar

PANE_TITLES = dict(
    zip(PANES, ("1 Goals", "2 Threads", "3 Timeline", "4 Failed runs", "5 Detail"), strict=True)
)
NO_GOALS = (
    "No goals yet. Create one with\n"
    "  goalsui goal create NAME --task TEXT --worker NAME=CRON\n"
    "or add a goal folder to the KB: it appears here at once."
)
NOTHING_FAILED = "Nothing failed. Failed, timed-out, interrupted and missed runs show here."


class MainScreen(SelectionPart, DetailPart, FilterPart, ActionsPart):
    """Five panes, a status bar at the top and the footer at the bottom."""

    BINDINGS: ClassVar[list[BindingType]] = [*keys.MAIN]  # replaces Screen's tab / shift+tab

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        # set before mounting: a class added after restyles every widget of the screen
        self.add_class("-tab-goals", update=False)
        #: a dashboard that came while the display was frozen (shown on thaw)
        self._pending: Dashboard | None = None
        #: (dashboard, until): no countdown on screen changes its text before ``until``
        self._quiet_until: tuple[Dashboard, datetime] | None = None
        #: the narrow layout's tab labels (its tab bar is mounted when the screen first narrows)
        self.tab_labels = dict(TAB_LABELS)
        self.tab_bar: TabBar | None = None

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield NoticeBar()
        with Horizontal(id="main-body"):
            with Vertical(id="left"):
                with Container(id="goals-pane", classes="pane"):
                    yield GoalsTree(read_only=self.read_only)
                    yield Static(Text(NO_GOALS), id="goals-empty", classes="empty-hint")
                with Container(id="threads-pane", classes="pane"):
                    yield ThreadsTable(read_only=self.read_only)
            with Vertical(id="right"):
                with Container(id="timeline-pane", classes="pane"):
                    yield TimelineTable(read_only=self.read_only)
                with Container(id="failed-pane", classes="pane"):
                    yield FailedTable(read_only=self.read_only)
                    yield Static(Text(NOTHING_FAILED), id="failed-empty", classes="empty-hint")
                with Container(id="detail-pane", classes="pane"):
                    yield DetailView(read_only=self.read_only)
        # the filter bar (hidden until '/') is mounted after the first frame
        yield Footer()

    def on_mount(self) -> None:
        for pane in PANES:
            self.query_one(f"#{pane}-pane").border_title = PANE_TITLES[pane]
            if pane != "detail":  # until the first dashboard arrives
                self.query_one(f"#{pane}-pane").border_subtitle = LOADING
        self.goals.focus()
        if self.gapp.notices:
            self.show_notice(self.gapp.notices[-1])
        else:
            self.query_one(NoticeBar).update(
                Text("no notifications yet · L: event log", style="dim")
            )
        self.post_message(MainMounted())  # bubbles up to the app: data may come now

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
                tab = tab_of(self.pane, self.tab)
                if self.tab_bar is None:  # built (and its module loaded) the first time it shows
                    from goalsui.tui.widgets.tab_bar import TabBar

                    self.tab_bar = TabBar(self.tab_labels, tab, id="pane-tabs")
                    self.mount(self.tab_bar, before="#main-body")
                self.show_tab(tab, focus=True)

    def show_tab(self, name: str, *, focus: bool = False) -> None:
        """The narrow layout's tab ``name`` (its panes show; focus moves into it)."""
        self.tab = name
        for other in TAB_PANES:
            self.set_class(other == name, f"-tab-{other}")
        if self.tab_bar is not None:
            self.tab_bar.pick(name)
        if focus and self.has_class("-narrow") and self.pane not in TAB_PANES[name]:
            self.call_after_refresh(self.pane_widget(TAB_PANES[name][0]).focus)

    def label_tab(self, name: str, text: str) -> None:
        """The label of the narrow layout's tab ``name``, kept for a tab bar mounted later."""
        self.tab_labels[name] = text
        if self.tab_bar is not None:
            self.tab_bar.label(name, text)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        bar = self.tab_bar
        if bar is not None and event.tabs is bar and bar.name_of(event.tab) != self.tab:
            self.show_tab(bar.name_of(event.tab), focus=True)

    def action_toggle_maximize(self) -> None:
        """Maximise the focused pane, or bring the layout back."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.pane_of(self.focused) or self.pane
        self.maximized = self.query_one(f"#{pane}-pane")

    def action_focus_pane(self, pane: str) -> None:
        if self.maximized is not None:
            self.minimize()
        if self.has_class("-narrow"):
            self.show_tab(tab_of(pane, self.tab))
        self.pane_widget(pane).focus()

    # -- the console's messages ------------------------------------------------------------------
    @property
    def _app_closing(self) -> bool:
        """The app shuts down: messages still queued change nothing on screen."""
        return not self.app.is_running or not self.is_attached

    def on_dashboard_ready(self, message: DashboardReady) -> None:
        """Fresh records (or the KB preview): show them, unless the display is frozen."""
        if self._app_closing:
            return
        if self.gapp.frozen:
            self._pending = message.dashboard
            return
        self.apply(message.dashboard)
        self.post_message(DashboardShown(message.dashboard.preview))  # up to the app
        if self._filter_mount is None:
            self.call_after_refresh(self._first_frame_shown)

    def _first_frame_shown(self) -> None:
        if not self._app_closing:
            self.mount_filter_bar()

    def on_plan_ready(self, message: PlanReady) -> None:
        if self._app_closing or self.gapp.frozen:
            return
        self.plan = message.plan
        if self.dash is not None:
            self.timeline.sync(self.dash, self.plan, self.gapp.clock(), self.gapp.palette)
            self.query_one("#timeline-pane").border_subtitle = self._timeline_subtitle()

    def on_tick(self, message: Tick) -> None:
        """Every second: countdowns and timers, unless none of them would change yet."""
        dash, now = self.dash, message.now
        if self._app_closing or dash is None or self.gapp.frozen:
            return
        quiet = self._quiet_until
        if quiet is not None and quiet[0] is dash and now < quiet[1]:
            self.update_status()  # no countdown changes its text yet: no pane work
            return
        self.tick(now)
        every_second = bool(dash.running) or any(
            node.is_expanded
            for key, node in self.goals.child_nodes.items()
            if key.startswith("worker/")
        )
        # only active schedules show a countdown (a paused one says "paused"); a worker's is
        # its intent's
        runs = [i.next_run_at for i in dash.intents.values() if i.status == IntentStatus.ACTIVE]
        self._quiet_until = (dash, next_visible_change(runs, now, every_second=every_second))

    def on_display_frozen(self, message: DisplayFrozen) -> None:
        if not message.frozen:
            pending, self._pending = self._pending, None
            if pending is not None:
                self.apply(pending)
        self.update_status()

    def on_palette_changed(self, message: PaletteChanged) -> None:
        if self.dash is not None and not self.gapp.frozen and not self._app_closing:
            self.apply(self.dash)

    def on_notice_added(self, message: NoticeAdded) -> None:
        self.show_notice(message.notice)

    def on_service_opened(self, message: ServiceOpened) -> None:
        self.load_detail()

    def on_records_on_screen(self, message: RecordsOnScreen) -> None:
        self.load_detail()
        self.goals.load_missing_boxes()

    def on_show_goal(self, message: ShowGoal) -> None:
        self.goals.select_key(f"goal/{message.goal_id}")
        self.goals.focus()

    # -- showing the records ------------------------------------------------------------------------
    def apply(self, dash: Dashboard) -> None:
        """Show a dashboard; tables update in place by key."""
        self.dash = dash
        app = self.gapp
        now, palette = app.clock(), app.palette
        with self.app.batch_update():
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
            self.reselect()
        self.goals.load_missing_boxes()  # KB files: once they may be read
        if dash.preview or dash.early:  # the service's own read follows
            return
        self.load_costs(self.selection.intent_id)  # the selected intent's runs may have changed
        self.ensure_live_poll()

    def _timeline_subtitle(self) -> str:
        overlaps = len(self.plan.overlaps)
        hours = int(self.timeline.span.total_seconds() // 3600)
        text = f"±{hours}h · ● ok ✗ failed ! missed ◆ next"
        if overlaps:
            text += f" · ▲ overlap predicted ({overlaps} intent{'s' if overlaps > 1 else ''})"
        if self.timeline.filter_text and self.dash is not None:
            total = len(self.timeline.shown_intents(self.dash, filtered=False))
            text = f"{_counted(self.timeline, self.timeline.row_count, total, 'intents')} · {text}"
        return text

    def _subtitles(self, dash: Dashboard, failures: int) -> None:
        goals = _counted(self.goals, len(self.goals._visible_goals(dash)), len(dash.goals), "goals")
        if not self.goals.filter_text:
            goals += f" · {sum(len(g.workers) for g in dash.goals)} workers"
        self.query_one("#goals-pane").border_subtitle = goals + (
            f" · from the KB, records {LOADING}" if dash.preview else ""
        )
        if dash.preview:
            for pane in ("threads", "timeline", "failed"):
                self.query_one(f"#{pane}-pane").border_subtitle = LOADING
            return
        open_todos = sum(t.open_count for t in dash.threads)
        shown_threads = sum(1 for k in self.threads.row_keys() if k.startswith("thread:"))
        threads = _counted(self.threads, shown_threads, len(dash.threads), "threads")
        self.query_one("#threads-pane").border_subtitle = f"{threads} · {open_todos} open"
        self.query_one("#timeline-pane").border_subtitle = self._timeline_subtitle()
        failed = _counted(self.failed, len(self.failed.items), failures, "need you")
        self.query_one("#failed-pane").border_subtitle = failed
        # what waits behind the hidden tabs
        self.label_tab("runs", "Runs · " + (f"✗ {failures} failed" if failures else "none failed"))
        self.label_tab("threads", f"Threads · {open_todos} open")

    def tick(self, now: datetime) -> None:
        """Countdowns, running timers, refresh age."""
        self.goals.tick(now)
        self.timeline.tick(now)
        self.update_status()

    def update_status(self) -> None:
        app = self.gapp
        dash = self.dash
        summary = dash.summary if dash else {}
        info = StatusInfo(
            scheduler=app.runtime.scheduler_state,
            running=len(dash.running) if dash else 0,
            due=int(summary.get("due", 0) or 0),
            failed=len(dash.attention) + len(dash.disabled) if dash else 0,
            goal_errors=int(summary.get("goal_errors", 0) or 0),
            refreshed_s=app.feed.refresh_age(),
            filter=self.filter_summary(),
            frozen=app.frozen,
            read_only=self.read_only,
            watcher=app.runtime.watcher_status(),
            loading=dash is None or dash.preview,
            today=today_text(dash.spend_today) if dash else "",
        )
        self.query_one(StatusBar).show(info, app.palette)


def _counted(widget: Any, shown: int, total: int, noun: str) -> str:
    """``11 goals``, or ``filter 'x' · 3 of 11 goals`` while filtered."""
    if not widget.filter_text:
        return f"{total} {noun}"
    return f"filter '{widget.filter_text}' · {shown} of {total} {noun}"
