"""The main screen's detail pane, read in workers: the selection's tabs and text (a live
run's output polled), the cost panel's runs, an expanded goal's box counts."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual import on, work

from goalsui.errors import GoalsuiError
from goalsui.tui.messages import WatcherBatch
from goalsui.tui.screens.detail_content import detail_tabs, read_tab
from goalsui.tui.screens.main_panes import LOADING, PanesScreen
from goalsui.tui.widgets.cost_panel import CostPanel
from goalsui.tui.widgets.detail import DetailView

LIVE_POLL_S = 0.5


class DetailPart(PanesScreen):
    """Fills the detail pane for the selection, off the UI thread."""

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self._live_timer: Any = None

    def update_detail(self, *, force: bool = False) -> None:
        if not self.is_mounted:
            return
        title, tabs = detail_tabs(self.dash, self.selection)
        changed = self.detail.set_tabs(title, tabs)
        if changed or force:
            self.load_detail()
            self.load_costs(self.selection.intent_id)
        self.ensure_live_poll()

    @work(name="Reading the costs", exclusive=True, group="costs", exit_on_error=False)
    async def load_costs(self, intent_id: int | None) -> None:
        """The selected intent's last runs for the cost panel (read in a thread)."""
        points = None
        if intent_id is not None and self.gapp.service_ready:
            with contextlib.suppress(GoalsuiError):  # the panel says there is nothing
                points = await asyncio.to_thread(self.gapp.service.costs.recent_runs, intent_id)
        self.query_one(CostPanel).show(intent_id, points)

    @on(DetailView.TabChanged)
    def _tab_changed(self) -> None:
        self.refresh_keys()
        self.load_detail()

    def ensure_live_poll(self) -> None:
        """Poll the shown run's output while it runs; stop when it ends or another shows."""
        tab = self.detail.current
        running = self.dash.running.values() if self.dash else ()
        live = bool(tab and tab.run_id and any(r.id == tab.run_id for r in running))
        if live and self._live_timer is None:
            self._live_timer = self.set_interval(LIVE_POLL_S, self.load_detail)
        elif not live and self._live_timer is not None:
            self._live_timer.stop()
            self._live_timer = None

    @work(name="Reading the detail", exclusive=True, group="detail", exit_on_error=False)
    async def load_detail(self) -> None:
        tab = self.detail.current
        if tab is None:
            return
        if not self.gapp.service_ready and tab.text is None:
            text, follow = LOADING, False
        else:
            text, follow = await asyncio.to_thread(
                read_tab, self.gapp.service, tab, self.gapp.clock()
            )
        if tab == self.detail.current:
            self.detail.set_body(tab, text, follow=follow)
            self.gapp.detail_shown(tab, text)
            self.ensure_live_poll()

    def on_watcher_batch(self, message: WatcherBatch) -> None:
        """A watcher batch: reload what shows the changed files (not while frozen)."""
        if self.gapp.frozen:
            return
        batch = message.batch
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
                self.goals.load_boxes(goal_id)
