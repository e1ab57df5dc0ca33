"""The Goals pane: goal -> workers -> inbox/outbox/log, with live countdowns."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from goalsui.domain.states import TERMINAL_INTENT, GoalStatus, IntentStatus, RunStatus
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import (
    INTENT_GLYPH,
    RUN_GLYPH,
    Palette,
    ago,
    countdown,
    describe_schedule,
    elapsed,
    one_line,
)
from goalsui.tui.model import BoxCounts, Dashboard, goal_log_count, load_boxes
from goalsui.tui.notices import WorkerFailures
from goalsui.tui.widgets.cost_panel import budget_label

if TYPE_CHECKING:
    from goalsui.domain.records import IntentRecord, RunRecord
    from goalsui.domain.views import GoalView, WorkerView

#: Expand every goal at first load when the KB has at most this many workers.
EXPAND_ALL_UP_TO = 40
#: the nodes under a worker, in this order
BOXES = ("inbox", "outbox", "runs")


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


@dataclass(frozen=True)
class NodeRef:
    """What a tree node stands for."""

    kind: str  # goal | worker | inbox | outbox | runs | goal-log | intent (goal-level)
    goal_id: str
    worker: str | None = None
    intent_id: int | None = None  # a goal-level intent (no worker)

    @property
    def key(self) -> str:
        parts = (self.kind, self.goal_id, self.worker or "", str(self.intent_id or ""))
        return "/".join(p for p in parts if p)


class GoalsTree(WorkerFailures, Tree[NodeRef]):
    """Goal trees with status badges, schedules, countdowns and running indicators."""

    DEFAULT_CSS = "GoalsTree { height: 1fr; overflow-x: hidden; }"
    # Not Tree's ▶: that is the "running" mark here.
    ICON_NODE = "▸ "
    ICON_NODE_EXPANDED = "▾ "

    def __init__(self, *, read_only: bool = False, id: str | None = "goals") -> None:
        super().__init__("KB", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        keys.bind(self, keys.GOALS_SAFE, keys.GOALS_ACTIONS, read_only=read_only)
        self.goal_nodes: dict[str, TreeNode[NodeRef]] = {}
        self.child_nodes: dict[str, TreeNode[NodeRef]] = {}
        self.boxes: dict[str, dict[str, BoxCounts]] = {}
        self.log_counts: dict[str, int] = {}
        self.seen_outbox: dict[tuple[str, str], float] = {}
        self.filter_text = ""
        #: Goals the operator opened; kept across filters and rebuilds.
        self.expanded_goals: set[str] = set()
        self._dash: Dashboard | None = None
        self._palette = Palette()
        self._initial = True

    # -- navigation ---------------------------------------------------------------------
    def render_label(self, node: TreeNode[NodeRef], base_style: Any, style: Any) -> Text:
        """The label, clipped with "…" to the room left beside its guides."""
        text = super().render_label(node, base_style, style)
        depth, parent = 0, node.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        room = self.scrollable_content_region.width - max(0, depth - 1) * self.guide_depth
        if room > 1 and text.cell_len > room:
            text.truncate(room, overflow="ellipsis")
        return text

    def action_scroll_top(self) -> None:
        self.action_scroll_home()

    def action_scroll_bottom(self) -> None:
        self.action_scroll_end()

    @property
    def selected_ref(self) -> NodeRef | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def select_key(self, key: str) -> bool:
        """Move the cursor to a node by its ``NodeRef.key`` ("goal/<id>", "worker/<id>/<w>")."""
        kind, _, rest = key.partition("/")
        node = self.goal_nodes.get(rest) if kind == "goal" else self.child_nodes.get(key)
        if node is None:
            return False
        self.move_cursor(node)
        return True

    # -- data -----------------------------------------------------------------------------
    def _visible_goals(self, dash: Dashboard) -> list[GoalView]:
        needle = self.filter_text.lower()
        if not needle:
            return dash.goals
        return [
            g
            for g in dash.goals
            if needle in g.name.lower()
            or needle in g.goal_id.lower()
            or any(needle in w.name.lower() for w in g.workers)
        ]

    def sync(self, dash: Dashboard, now: datetime, palette: Palette) -> None:
        """Show ``dash``: add, remove and relabel nodes by key; the cursor stays put."""
        self._dash, self._palette = dash, palette
        goals = self._visible_goals(dash)
        wanted = [g.goal_id for g in goals]
        wanted_set = set(wanted)
        kept = [g for g in self.goal_nodes if g in wanted_set]
        new = [g for g in wanted if g not in self.goal_nodes]
        if kept + new != wanted:
            self._rebuild(goals)
        else:
            for goal_id in [g for g in self.goal_nodes if g not in wanted_set]:
                self.goal_nodes.pop(goal_id).remove()
                self._forget_children(goal_id)
            by_id = {g.goal_id: g for g in goals}
            for goal_id in new:
                self._add_goal(by_id[goal_id])
        if self._initial and goals:
            self._initial = False
            total = sum(len(g.workers) for g in goals)
            if total <= EXPAND_ALL_UP_TO or len(goals) == 1:
                for goal_id, node in self.goal_nodes.items():
                    self.expanded_goals.add(goal_id)
                    node.expand()
            if self.cursor_line < 0:
                self.cursor_line = 0
        needle = self.filter_text.lower()
        for goal in goals:
            node = self.goal_nodes[goal.goal_id]
            named = needle in goal.name.lower() or needle in goal.goal_id.lower()
            if needle and not named and not node.is_expanded:
                node.expand()  # matched by a worker name: show it
            if node.is_expanded:
                self._sync_children(node, goal)
        self.tick(now)

    def _rebuild(self, goals: list[GoalView]) -> None:
        cursor = self.selected_ref
        self.clear()
        self.goal_nodes.clear()
        self.child_nodes.clear()
        for goal in goals:
            self._add_goal(goal)
        if cursor is not None and not self.select_key(cursor.key):
            self.select_key(NodeRef("goal", cursor.goal_id).key)

    def _add_goal(self, goal: GoalView) -> TreeNode[NodeRef]:
        label = goal_label(goal, self._dash, self._palette, None)
        expand = goal.goal_id in self.expanded_goals
        node = self.root.add(label, data=NodeRef("goal", goal.goal_id), expand=expand)
        self.goal_nodes[goal.goal_id] = node
        if expand:
            self._sync_children(node, goal)
        return node

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        """An opened goal shows its workers and intents, and counts its boxes."""
        ref = event.node.data
        if ref is None or ref.kind != "goal":
            return
        if not self.filter_text:
            self.expanded_goals.add(ref.goal_id)
        goal = self._dash.goal(ref.goal_id) if self._dash else None
        if goal is not None:
            self._sync_children(event.node, goal)
            self.tick(goals_app(self).clock())
            self.load_boxes(ref.goal_id)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[NodeRef]) -> None:
        ref = event.node.data
        if ref is not None and ref.kind == "goal":
            self.expanded_goals.discard(ref.goal_id)

    def _sync_children(self, node: TreeNode[NodeRef], goal: GoalView) -> None:
        """The goal's workers (each with its boxes), its own intents and its log; each
        leaf's label is written by the next ``tick``."""
        gid = goal.goal_id
        wanted = [
            *(NodeRef("worker", gid, w.name) for w in goal.workers),
            *(NodeRef("intent", gid, intent_id=i.id) for i in self._goal_intents(gid)),
            NodeRef("goal-log", gid),
        ]
        if [child.data for child in node.children] != wanted:
            node.remove_children()
            self._forget_children(gid)
            for ref in wanted:
                if ref.kind != "worker":
                    self.child_nodes[ref.key] = node.add_leaf(ref.kind, data=ref)
                    continue
                wnode = self.child_nodes[ref.key] = node.add(ref.worker or "", data=ref)
                for box in BOXES:
                    bref = NodeRef(box, gid, ref.worker)
                    self.child_nodes[bref.key] = wnode.add_leaf(box, data=bref)

    def _forget_children(self, goal_id: str) -> None:
        for key in [k for k in self.child_nodes if k.split("/")[1] == goal_id]:
            del self.child_nodes[key]

    def _goal_intents(self, goal_id: str) -> list[IntentRecord]:
        """The goal's own intents (a reminder with ``--goal``, not a worker's schedule)."""
        dash = self._dash
        if dash is None:
            return []
        return sorted(
            (
                i
                for i in dash.intents.values()
                if i.goal_id == goal_id
                and not i.worker
                and (i.status not in TERMINAL_INTENT or dash.recent.get(i.id or -1))
            ),
            key=lambda i: (i.title.lower(), i.id or 0),
        )

    def _intent_label(self, intent: IntentRecord, now: datetime) -> Text:
        p = self._palette
        live = self._dash is not None and intent.id in self._dash.running
        status = "firing" if live else intent.status
        text = Text(INTENT_GLYPH.get(status, "?") + " ", style=p.intent(status))
        text.append(one_line(intent.title, 60), style="bold")
        if intent.status == IntentStatus.ACTIVE:
            text.append(f"  {countdown(intent.next_run_at, now)}", style=p.accent)
        else:
            text.append(f"  {intent.status}", style=p.muted)
        text.append(
            "  " + describe_schedule(intent.kind, intent.schedule, intent.timezone), style=p.muted
        )
        return text

    def load_missing_boxes(self) -> None:
        """Count the boxes of every open goal not counted (nor being counted) yet."""
        if not goals_app(self).kb_readable:
            return
        for goal_id, node in self.goal_nodes.items():
            if node.is_expanded and goal_id not in self.boxes:
                # being counted: a refresh meanwhile starts no second count
                self.boxes[goal_id] = {}
                self.load_boxes(goal_id)

    @work(name="Counting the boxes", group="boxes", exit_on_error=False)
    async def load_boxes(self, goal_id: str) -> None:
        """Count the goal's inbox, outbox and log files (in a thread), then show them."""
        goal, app = self._dash.goal(goal_id) if self._dash else None, goals_app(self)
        if goal is None or not app.kb_readable:  # counted once it is (load_missing_boxes)
            return
        # a goal folder gone meanwhile counts as empty (the next refresh drops the goal)
        boxes = await asyncio.to_thread(load_boxes, app.kb_tree, goal)
        log_count = await asyncio.to_thread(goal_log_count, app.kb_tree, goal_id)
        for worker, counts in boxes.items():
            self.seen_outbox.setdefault((goal_id, worker), counts.newest_outbox)
        self.boxes[goal_id] = boxes
        self.log_counts[goal_id] = log_count
        if not app.frozen:
            self.tick(app.clock())

    def mark_seen(self, ref: NodeRef) -> None:
        """Opening an outbox clears its "new" badge."""
        if ref.kind == "outbox" and ref.worker:
            counts = self.boxes.get(ref.goal_id, {}).get(ref.worker)
            if counts is not None:
                self.seen_outbox[(ref.goal_id, ref.worker)] = counts.newest_outbox

    # -- labels ---------------------------------------------------------------------------
    def tick(self, now: datetime) -> None:
        """Re-render countdowns and running timers (called every second)."""
        dash = self._dash
        if dash is None:
            return
        by_id = {g.goal_id: g for g in dash.goals}
        for goal_id, node in self.goal_nodes.items():
            goal = by_id.get(goal_id)
            if goal is None:
                continue
            self._relabel(node, goal_label(goal, dash, self._palette, now))
            if not node.is_expanded:
                continue
            workers = {w.name: w for w in goal.workers}
            for child in node.children:
                ref = child.data
                if ref is None:
                    continue
                if ref.kind == "worker" and ref.worker in workers:
                    w = workers[ref.worker]
                    self._relabel(child, self._worker_label(goal, w, now))
                    if child.is_expanded:
                        for box, kind in zip(child.children, BOXES, strict=True):
                            self._relabel(box, self._box_label(goal, w, kind, now))
                elif ref.kind == "intent" and ref.intent_id in dash.intents:
                    self._relabel(child, self._intent_label(dash.intents[ref.intent_id], now))
                elif ref.kind == "goal-log":
                    count = self.log_counts.get(goal_id)
                    today = f"  {count} today" if count else ""
                    self._relabel(child, Text.assemble("log", (today, self._palette.muted)))

    @staticmethod
    def _relabel(node: TreeNode[NodeRef], label: Text) -> None:
        if node.label != label:
            node.set_label(label)

    def _worker_label(self, goal: GoalView, w: WorkerView, now: datetime) -> Text:
        """Status, name, what comes next, last result; the schedule last (it may be cut)."""
        p = self._palette
        if self._dash is not None and self._dash.preview:  # the KB's names only, so far
            return Text.assemble(("· ", p.muted), (w.name, "bold"), ("  loading…", p.muted))
        run = live_run(self._dash, w)
        status = "firing" if run is not None else (w.status or "")
        text = Text.assemble(
            (INTENT_GLYPH.get(status, "?") + " ", p.intent(status)), (w.name, "bold")
        )
        if run is not None:
            text.append(f"  ▶ running {elapsed(run.started_at, now)}", style=f"bold {p.running}")
        elif w.status == IntentStatus.ACTIVE:
            text.append(f"  {countdown(w.next_run_at, now)}", style=p.accent)
        elif w.status == IntentStatus.FAILED:
            text.append("  auto-disabled", style=f"bold {p.failed}")
        else:
            text.append(
                f"  {w.status}", style=p.warning if w.status == IntentStatus.PAUSED else p.muted
            )
        last = self._dash.last_run(w.intent_id) if self._dash else None
        if last is not None and last.status != RunStatus.RUNNING:
            text.append(f"  last {RUN_GLYPH.get(last.status, '?')}", style=p.run(last.status))
        if goal.error and f"/workers/{w.name}/" in goal.error:
            text.append("  ⚠ definition error", style=f"bold {p.failed}")
        if self._new_in_outbox(goal.goal_id, w.name):
            text.append("  ✉ new", style=f"bold {p.accent}")
        text.append("  " + describe_schedule(w.kind, w.schedule, w.timezone), style=p.muted)
        return text

    def _box_label(self, goal: GoalView, w: WorkerView, box: str, now: datetime) -> Text:
        p = self._palette
        text = Text(box)
        if self._dash is not None and self._dash.preview:
            return text
        if box == "runs":
            runs = self._dash.recent.get(w.intent_id or -1, []) if self._dash else []
            if runs:
                last = runs[-1]
                text.append(f"  {len(runs)} in 24h", style=p.muted)
                text.append(
                    f"  last {last.status} {ago(last.finished_at or last.started_at, now)}",
                    style=p.run(last.status),
                )
            else:
                text.append("  none in 24h", style=p.muted)
            return text
        counts = self.boxes.get(goal.goal_id, {}).get(w.name)
        if counts is None:
            return text
        n = counts.inbox if box == "inbox" else counts.outbox
        text.append(f"  {n}", style=p.muted)
        if box == "outbox" and self._new_in_outbox(goal.goal_id, w.name):
            text.append("  new", style=f"bold {p.accent}")
        return text

    def _new_in_outbox(self, goal_id: str, worker: str) -> bool:
        """A file came to the outbox since the operator last opened it."""
        counts = self.boxes.get(goal_id, {}).get(worker)
        newest = counts.newest_outbox if counts is not None else 0.0
        return newest > self.seen_outbox.get((goal_id, worker), newest)
