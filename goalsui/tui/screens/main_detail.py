"""The main screen's detail pane: the selection's tabs and each tab's text (read in workers,
a live run's output polled), the cost panel's runs, an expanded goal's box counts."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual import on, work

from goalsui.domain.records import RunRecord
from goalsui.domain.states import ATTENTION_RUNS, IntentStatus, RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.tui.fmt import RUN_GLYPH, clock_time, describe_schedule, duration
from goalsui.tui.messages import WatcherBatch
from goalsui.tui.model import Dashboard, visible_files
from goalsui.tui.screens.main_panes import LOADING, PanesScreen, Selection, SelectionKind
from goalsui.tui.widgets.detail import DetailTab, DetailView
from goalsui.tui.widgets.failed_pane import run_error

if TYPE_CHECKING:
    from goalsui.kb.confined import ConfinedTree
    from goalsui.service import Service
    from goalsui.tui.app_ref import ConsoleHost

LIVE_POLL_S = 0.5


class DetailPart(PanesScreen):
    """Fills the detail pane for the selection, off the UI thread."""

    _live_timer: Any = None

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
        await self.detail.show_costs(intent_id, points)

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
        needs_service = tab.run_id is not None or tab.thread_id is not None
        ready = self.gapp.service_ready if needs_service else self.gapp.kb_readable
        if tab.text is None and not ready:
            text, follow = LOADING, False
        else:
            text, follow = await asyncio.to_thread(read_tab, self.gapp, tab, self.gapp.clock())
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
            gid, rel = tab.goal_id, tab.rel
            if any(g == gid and (r == rel or r.startswith(rel + "/")) for g, r in batch.files):
                self.load_detail()
        for goal_id in {c.goal_id for c in batch.changes if c.kind in ("box", "log") and c.goal_id}:
            node = self.goals.goal_nodes.get(goal_id)
            if node is not None and node.is_expanded:
                self.goals.load_boxes(goal_id)


# -- what the pane shows: a selection's tabs (UI thread), a tab's text (in a worker) --------
#: how much of a run's output the detail pane reads (the tail)
DETAIL_TAIL_BYTES = 64 * 1024

WELCOME = """Select a goal, worker, intent, run or todo to see its files here.

Keys: tab / 1-5 move between panes · / filter · ? help · ctrl+p every command.
On a worker or intent: p pause/resume/reinstate · r run now · x stop the running run
X end the schedule · R retry · e edit · o output.
"""

Tabs = tuple[str, list[DetailTab]]
GOAL_FILES = ("protocol.md", "state.yaml", "definition.yaml")


def detail_tabs(dash: Dashboard | None, sel: Selection) -> Tabs:
    """The detail pane's title and tabs for ``sel`` (the welcome text for nothing)."""
    kind = sel.kind
    if kind == SelectionKind.GOAL:
        tabs = _goal_tabs(dash, sel)
    elif kind in (SelectionKind.INBOX, SelectionKind.OUTBOX, SelectionKind.GOAL_LOG):
        tabs = _box_tabs(sel)
    elif kind == SelectionKind.RUNS:
        tabs = _runs_tabs(dash, sel)
    elif kind in (SelectionKind.WORKER, SelectionKind.INTENT, SelectionKind.RUN):
        tabs = _schedule_tabs(dash, sel)
    elif kind in (SelectionKind.THREAD, SelectionKind.TODO):
        tabs = _thread_tabs(dash, sel)
    else:
        tabs = None
    return tabs or ("", [DetailTab("help", text=WELCOME)])


def _goal_tabs(dash: Dashboard | None, sel: Selection) -> Tabs | None:
    goal = dash.goal(sel.goal_id) if dash else None
    if goal is None:
        return None
    tabs: list[DetailTab] = []
    if goal.error:
        tabs.append(DetailTab("⚠ KB error", text=problems_text(goal.error)))
    tabs += [DetailTab(name, goal.goal_id, name) for name in GOAL_FILES]
    return f"goal {goal.goal_id} · {goal.path}", tabs


def _box_tabs(sel: Selection) -> Tabs | None:
    """A worker's inbox or outbox folder, or the goal's log."""
    log = sel.kind == SelectionKind.GOAL_LOG
    if not sel.goal_id or not (log or sel.worker):
        return None
    rel = "log" if log else f"workers/{sel.worker}/{sel.kind}"
    return f"{sel.goal_id}/{rel}", [DetailTab("log" if log else sel.kind, sel.goal_id, rel)]


def _runs_tabs(dash: Dashboard | None, sel: Selection) -> Tabs | None:
    if dash is None:
        return None
    runs = list(reversed(dash.recent.get(sel.intent_id or -1, [])))[:6]
    tabs = [
        DetailTab(f"run {run.id} {RUN_GLYPH.get(run.status, '?')}", run_id=run.id) for run in runs
    ]
    if not tabs:
        tabs.append(DetailTab("runs", text="No runs in the last 24 h."))
    return f"runs of {sel.goal_id}/{sel.worker}", tabs


def _schedule_tabs(dash: Dashboard | None, sel: Selection) -> Tabs | None:
    """A worker, an intent or a run: output, files or instruction, the last output."""
    intent = dash.intents.get(sel.intent_id) if dash and sel.intent_id else None
    if not (sel.worker or intent is not None or sel.run_id):
        return None
    title = ""
    tabs: list[DetailTab] = []
    if sel.kind == SelectionKind.RUN and sel.run_id:
        tabs.append(DetailTab(f"run {sel.run_id} output", run_id=sel.run_id))
    if intent is not None and intent.status == IntentStatus.FAILED:
        why = f"Auto-disabled after repeated failures.\n\nLast error:\n{intent.last_error or '-'}"
        tabs.append(DetailTab("⚠ disabled", text=why))
    if sel.goal_id and sel.worker:
        title = f"worker {sel.goal_id}/{sel.worker}"
        files = ("prompt.md", "definition.yaml")
        tabs += [DetailTab(name, sel.goal_id, f"workers/{sel.worker}/{name}") for name in files]
    elif intent is not None:
        title = f"intent {intent.id} · {intent.title}"
        tabs.append(DetailTab("instruction", text=intent_text(intent)))
        if intent.checklist:
            tabs.append(DetailTab("checklist", text=intent.checklist))
    if sel.kind != SelectionKind.RUN and sel.run_id:
        live = dash is not None and sel.intent_id in dash.running
        tabs.append(DetailTab("▶ live output" if live else "last output", run_id=sel.run_id))
    return title or f"run {sel.run_id}", tabs


def _thread_tabs(dash: Dashboard | None, sel: Selection) -> Tabs | None:
    if not sel.thread_id:
        return None
    thread = next((t for t in dash.threads if t.thread.id == sel.thread_id), None) if dash else None
    title = f"thread {sel.thread_id}" + (f" · {thread.thread.title}" if thread else "")
    return title, [DetailTab("checklist and messages", thread_id=sel.thread_id)]


# -- a tab's text (blocking: in a worker) ---------------------------------------------------------
def read_tab(host: ConsoleHost, tab: DetailTab, now: datetime) -> tuple[str, bool]:
    """A tab's text, and whether to follow it (a run's output grows at the end)."""
    try:
        if tab.run_id is not None:
            run = host.service.runs.get(tab.run_id).record()
            body = host.service.runs.output(tab.run_id, tail_bytes=DETAIL_TAIL_BYTES)
            empty = "(no output yet)" if run.status == RunStatus.RUNNING else "(no output)"
            return run_header(run, now) + (body or empty), True
        if tab.thread_id is not None:
            return thread_text(host.service, tab.thread_id), False
        if tab.text is not None:
            return tab.text, False
        if tab.goal_id is not None and tab.rel is not None:
            return read_kb(host.kb_tree(tab.goal_id), tab.goal_id, tab.rel), False
        return "", False
    except GoalsuiError as exc:
        return f"(cannot show this: {exc})", False


def problems_text(error: str) -> str:
    lines = [p.strip() for p in error.split("; ") if p.strip()]
    return (
        "This goal has files that fail validation. The last good version keeps running;\n"
        "fix the file and it is picked up at once.\n\n" + "\n".join(f"• {line}" for line in lines)
    )


def intent_text(intent: Any) -> str:
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


def run_header(run: RunRecord, now: datetime) -> str:
    parts = [
        f"run {run.id} · {run.status} · trigger {run.trigger} · started {clock_time(run.started_at, now)}"
    ]
    if run.finished_at:
        parts.append(f"took {duration(run.started_at, run.finished_at)}")
    if run.exit_code is not None:
        parts.append(f"exit {run.exit_code}")
    header = " · ".join(parts)
    error = run_error(run) if run.status in ATTENTION_RUNS | {RunStatus.SKIPPED} else ""
    if error:
        header += f"\nreason: {error}"
    return header + "\n" + "─" * 40 + "\n"


def read_kb(tree: ConfinedTree, goal_id: str, rel: str) -> str:
    """A file's text; for a folder, its listing (newest first) and the newest file."""
    if not tree.resolve(rel).is_dir():
        return tree.read(rel)
    entries = visible_files(tree, rel)
    entries.sort(key=lambda e: (e["modified"], e["name"]), reverse=True)
    if not entries:
        return f"{goal_id}/{rel} is empty."
    lines = [f"{len(entries)} file{'s' if len(entries) != 1 else ''}, newest first:"]
    lines += [
        f"  {e['modified'].astimezone():%Y-%m-%d %H:%M:%S}  {e['size']:>7}  {e['name']}"
        for e in entries[:20]
    ]
    newest = entries[0]
    lines += ["", f"── {newest['name']} " + "─" * 20]
    try:
        lines.append(tree.read(newest["path"]))
    except GoalsuiError as exc:
        lines.append(f"(cannot read: {exc})")
    return "\n".join(lines)


def thread_text(service: Service, thread_id: int) -> str:
    thread = service.threads.get(thread_id)
    todos = service.todos.list(thread_id)
    messages = service.threads.messages(thread_id, limit=30)
    lines = [f"{thread.title}{'  (private)' if thread.private else ''}", ""]
    lines += [f"  [{'x' if todo.done else ' '}] {todo.text}" for todo in todos]
    lines += ["", f"── last {len(messages)} messages (T: all threads) " + "─" * 10]
    for m in messages:
        lines.append(f"{m.role} · {m.created_at.astimezone():%Y-%m-%d %H:%M}")
        if m.provenance:
            lines.append(f"↩ {m.provenance}")
        lines.append(plain(m.content).rstrip())
        lines.append("")
    return "\n".join(lines)
