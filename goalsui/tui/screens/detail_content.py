"""What the detail pane shows for a selection: its tabs (on the UI thread) and each tab's
text (in a worker); no widgets."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from goalsui.domain.records import RunRecord
from goalsui.domain.states import ATTENTION_RUNS, IntentStatus, RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.tui.fmt import RUN_GLYPH, clock_time, describe_schedule, duration
from goalsui.tui.model import Dashboard, visible_files
from goalsui.tui.screens.main_panes import Selection, SelectionKind
from goalsui.tui.widgets.detail import DetailTab
from goalsui.tui.widgets.failed_pane import run_error

if TYPE_CHECKING:
    from goalsui.service import Service

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
    if sel.kind == SelectionKind.GOAL_LOG:
        return (
            (f"{sel.goal_id}/log", [DetailTab("log", sel.goal_id, "log")]) if sel.goal_id else None
        )
    if not (sel.goal_id and sel.worker):
        return None
    rel = f"workers/{sel.worker}/{sel.kind}"
    return f"{sel.goal_id}/{rel}", [DetailTab(sel.kind, sel.goal_id, rel)]


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
        for name in ("prompt.md", "definition.yaml"):
            tabs.append(DetailTab(name, sel.goal_id, f"workers/{sel.worker}/{name}"))
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
def read_tab(service: Service, tab: DetailTab, now: datetime) -> tuple[str, bool]:
    """A tab's text, and whether to follow it (a run's output grows at the end)."""
    try:
        if tab.run_id is not None:
            run = service.runs.get(tab.run_id).record()
            body = service.runs.output(tab.run_id, tail_bytes=DETAIL_TAIL_BYTES)
            empty = "(no output yet)" if run.status == RunStatus.RUNNING else "(no output)"
            return run_header(run, now) + (body or empty), True
        if tab.thread_id is not None:
            return thread_text(service, tab.thread_id), False
        if tab.text is not None:
            return tab.text, False
        if tab.goal_id is not None and tab.rel is not None:
            return read_kb(service, tab.goal_id, tab.rel), False
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


def read_kb(service: Service, goal_id: str, rel: str) -> str:
    """A file's text; for a folder, its listing (newest first) and the newest file."""
    path = service.files.path(goal_id, rel)
    if not path.is_dir():
        return str(service.files.read(goal_id, rel))
    entries = visible_files(service, goal_id, rel)
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
        lines.append(service.files.read(goal_id, newest["path"]))
    except GoalsuiError as exc:
        lines.append(f"(cannot read: {exc})")
    return "\n".join(lines)


def thread_text(service: Service, thread_id: int) -> str:
    thread = service.threads.get(thread_id)
    todos = service.todos.list(thread_id)
    messages = service.threads.messages(thread_id, limit=30)
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
