"""The main screen's selection: the item under the focused pane's cursor."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import on
from textual.widgets import DataTable, Tree

from goalsui.tui.screens.main_panes import PANES, PanesScreen, Selection, SelectionKind
from goalsui.tui.widgets.goals_tree import NodeRef
from goalsui.tui.widgets.layout_tabs import TAB_PANES, tab_of


class SelectionPart(PanesScreen):
    """Keeps :attr:`selection` in step with the panes' cursors and the records."""

    _last_key_state: tuple[Any, ...] | None = None

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

    @on(Tree.NodeSelected, "#goals")
    def _tree_selected(self, event: Tree.NodeSelected[NodeRef]) -> None:
        ref = event.node.data
        if ref is not None and ref.kind == SelectionKind.RUNS:
            self.action_open_output()

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        pane = self.pane_of(event.data_table)
        if pane is not None and (pane == self.pane or self.selection.kind == SelectionKind.NONE):
            self._select_from(pane)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if self.pane_of(event.data_table) in ("timeline", "failed"):
            self.action_open_output()

    def _select_from(self, pane: str) -> None:
        sel = self.selection_for(pane)
        if sel != self.selection:
            self.selection = sel
            if sel.kind == SelectionKind.OUTBOX:
                self.goals.mark_seen(NodeRef("outbox", sel.goal_id or "", sel.worker))
            self.refresh_keys()
            self.update_detail()

    def refresh_keys(self) -> None:
        """Rebuild the footer when what decides which keys apply has changed."""
        intent = self.intent()
        goal = self.goal() if self.selection.kind == SelectionKind.GOAL else None
        last = self.dash.last_run(intent.id) if self.dash and intent is not None else None
        state = (
            self.selection,
            intent.status if intent is not None else None,
            intent.consecutive_failures if intent is not None else None,
            last.status if last is not None else None,
            tuple(w.status for w in goal.workers) if goal is not None else None,
            self.detail.current if self.is_mounted else None,
        )
        if state != self._last_key_state:
            self._last_key_state = state
            self.refresh_bindings()

    def reselect(self) -> None:
        """After a refresh: the same item, with fresh facts (its run, its status)."""
        pane = self.selection.pane or self.pane
        if pane not in PANES or pane == "detail":
            pane = "goals"
        sel = self.selection_for(pane)
        changed = sel != self.selection
        self.selection = sel
        self.refresh_keys()
        # Records shown in the detail (a thread, a run) may have changed with the refresh;
        # KB files are re-read on watcher events instead.
        tab = self.detail.current
        self.update_detail(force=changed or bool(tab and (tab.thread_id or tab.run_id)))

    def selection_for(self, pane: str) -> Selection:
        """The item under the cursor of ``pane``, with its intent and run from the records."""
        if pane == "goals":
            return self._goals_selection()
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
            if intent_id is None or self.dash is None:
                return Selection(pane=pane)
            live = self.dash.running.get(intent_id)
            run = live or self.dash.last_run(intent_id)
            return self._intent_selection(
                SelectionKind.INTENT, pane, intent_id, run.id if run else None
            )
        if pane == "failed":
            item = self.failed.selected_item()
            if item is None:
                return Selection(pane=pane)
            kind = SelectionKind.RUN if item.run_id else SelectionKind.INTENT
            return self._intent_selection(kind, pane, item.intent_id, item.run_id)
        return replace(self.selection)

    def _goals_selection(self) -> Selection:
        dash = self.dash
        ref = self.goals.selected_ref
        if ref is None:
            return Selection(pane="goals")
        intent_id = ref.intent_id  # a goal-level intent's node
        if ref.worker and dash is not None:
            intent = dash.intent_of(ref.goal_id, ref.worker)
            intent_id = intent.id if intent else None
        run = dash.last_run(intent_id) if dash else None
        live = dash.running.get(intent_id or -1) if dash else None
        shown = live or run
        return Selection(
            kind=SelectionKind(ref.kind),
            pane="goals",
            goal_id=ref.goal_id,
            worker=ref.worker,
            intent_id=intent_id,
            run_id=shown.id if shown else None,
        )

    def _intent_selection(
        self, kind: SelectionKind, pane: str, intent_id: int, run_id: int | None
    ) -> Selection:
        """An intent (or one of its runs) picked in the timeline or the failed pane."""
        intent = self.dash.intents.get(intent_id) if self.dash else None
        return Selection(
            kind=kind,
            pane=pane,
            goal_id=intent.goal_id if intent else None,
            worker=intent.worker if intent else None,
            intent_id=intent_id,
            run_id=run_id,
        )
