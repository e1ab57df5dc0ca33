"""Every key binding of the console, each with an ``id`` so goalsui.yaml can remap it
(``keymap: {run_now: g}``); ``*_ACTIONS`` are not bound at all in a read-only console."""

from __future__ import annotations

from collections.abc import Iterable

from textual.binding import Binding
from textual.dom import DOMNode

# -- app-wide (GoalsApp) ----------------------------------------------------------------
APP = [
    Binding("question_mark,f1", "help", "Help", id="help", key_display="?"),
    Binding("ctrl+p", "command_palette", "Palette", id="palette", priority=True, show=False),
    Binding("ctrl+q", "quit", "Quit", id="quit_now", priority=True, show=False),
    Binding("ctrl+r", "refresh_now", "Refresh now", id="refresh", show=False),
    Binding("Z", "freeze", "Freeze display", id="freeze", show=False),
    Binding("t", "next_theme", "Next theme", id="theme", show=False),
    Binding("J", "jump_notice", "Go to the last notification", id="jump_notice", show=False),
]
JUMP = APP[-1]

# -- main screen: navigation and screens ------------------------------------------------
MAIN = [
    Binding("tab", "app.focus_next", "Next pane", id="nav.next_pane", show=False),
    Binding("shift+tab", "app.focus_previous", "Previous pane", id="nav.prev_pane", show=False),
    Binding("1", "focus_pane('goals')", "Goals pane", id="pane.goals", show=False),
    Binding("2", "focus_pane('threads')", "Threads pane", id="pane.threads", show=False),
    Binding("3", "focus_pane('timeline')", "Timeline pane", id="pane.timeline", show=False),
    Binding("4", "focus_pane('failed')", "Failed runs pane", id="pane.failed", show=False),
    Binding("5", "focus_pane('detail')", "Detail pane", id="pane.detail", show=False),
    Binding("slash", "filter", "Filter", id="filter", key_display="/"),
    Binding("m", "toggle_maximize", "Maximise pane", id="maximize", show=False),
    Binding("escape", "clear_filter", "Clear filter", id="clear_filter", show=False),
    Binding(
        "F", "app.open_screen('failures')", "Failures screen", id="screen.failures", show=False
    ),
    Binding("M", "app.open_screen('reports')", "Morning reports", id="screen.reports", show=False),
    Binding("E", "app.open_screen('events')", "Events screen", id="screen.events", show=False),
    Binding("T", "app.open_screen('threads')", "Threads screen", id="screen.threads", show=False),
    Binding("L", "app.open_screen('journal')", "Event log", id="screen.journal", show=False),
    Binding("U", "app.open_screen('runs')", "Runs screen", id="screen.runs", show=False),
    Binding("q", "app.quit", "Quit", id="quit"),
]

# -- per pane (bound on the focused widget so the footer shows what fits) ---------------
LIST_NAV = [
    Binding("j", "cursor_down", "Down", id="nav.down", show=False),
    Binding("k", "cursor_up", "Up", id="nav.up", show=False),
    Binding("g", "scroll_top", "Top", id="nav.top", show=False),
    Binding("G", "scroll_bottom", "Bottom", id="nav.bottom", show=False),
]
COPY = Binding("y", "screen.copy_id", "Copy id", id="copy_id", show=False)
OUTPUT = Binding("o", "screen.open_output", "Output", id="open_output")

PAUSE = Binding("p", "screen.pause", "Pause/Resume", id="pause")  # reinstates an ended one
RUN_NOW = Binding("r", "screen.run_now", "Run now", id="run_now")
STOP = Binding("x", "screen.stop_run", "Stop run…", id="stop_run")
END = Binding("X", "screen.end_schedule", "End schedule…", id="end_schedule")
RETRY = Binding("R", "screen.retry", "Retry", id="retry")
EDIT = Binding("e", "screen.edit", "Edit", id="edit")
DISMISS = Binding("d", "dismiss", "Dismiss", id="dismiss")
TODO_ADD = Binding("a", "add_todo", "Add todo", id="todo.add")
TODO_TOGGLE = Binding("space", "toggle_todo", "Done/Reopen", id="todo.toggle", key_display="space")

GOALS_SAFE = [*LIST_NAV, OUTPUT, COPY]
GOALS_ACTIONS = [PAUSE, RUN_NOW, STOP, END, RETRY, EDIT]
THREADS_SAFE = [*LIST_NAV, COPY]
THREADS_ACTIONS = [TODO_ADD, TODO_TOGGLE]
TIMELINE_SAFE = [
    *LIST_NAV,
    OUTPUT,
    COPY,
    Binding(
        "plus,equals_sign",
        "zoom(-1)",
        "Zoom in",
        id="timeline.zoom_in",
        show=False,
        key_display="+",
    ),
    Binding("minus", "zoom(1)", "Zoom out", id="timeline.zoom_out", show=False, key_display="-"),
]
TIMELINE_ACTIONS = [PAUSE, RUN_NOW, STOP, END, RETRY]
FAILED_SAFE = [*LIST_NAV, OUTPUT, COPY]
FAILED_ACTIONS = [RETRY, DISMISS, PAUSE]
DETAIL_SAFE = [
    Binding(
        "left_square_bracket", "cycle_file(-1)", "Prev file", id="detail.prev_file", key_display="["
    ),
    Binding(
        "right_square_bracket", "cycle_file(1)", "Next file", id="detail.next_file", key_display="]"
    ),
    OUTPUT,
]
DETAIL_ACTIONS = [EDIT]
#: Each pane of the main screen: its title and the bindings it accepts (safe, actions).
PANE_KEYS = [
    ("Goals pane (1)", GOALS_SAFE, GOALS_ACTIONS),
    ("Threads pane (2)", THREADS_SAFE, THREADS_ACTIONS),
    ("Timeline pane (3)", TIMELINE_SAFE, TIMELINE_ACTIONS),
    ("Failed runs pane (4)", FAILED_SAFE, FAILED_ACTIONS),
    ("Detail pane (5)", DETAIL_SAFE, DETAIL_ACTIONS),
]

# -- secondary screens ------------------------------------------------------------------
BACK = Binding("q,escape", "back", "Back", id="back")
SCREEN_MAXIMIZE = Binding("m", "toggle_maximize", "Maximise pane", id="screen.maximize", show=False)
FAILURES_ACTIONS = [
    Binding("r", "replay", "Replay missed", id="run_now"),
    Binding("R", "retry", "Retry", id="retry"),
    Binding("d", "dismiss", "Dismiss", id="dismiss"),
    Binding("p", "resume", "Resume intent", id="pause"),
]
THREADS_SCREEN_ACTIONS = [
    Binding("c", "compose", "Write", id="threads.compose"),
    Binding("ctrl+x", "cancel_reply", "Cancel reply", id="threads.cancel_reply", priority=True),
]
#: on the compose box: escape leaves the input (the screen's ``back`` does), never the screen
LEAVE_BOX = Binding("escape", "screen.back", "Leave box", id="compose.leave")
RUNS_SCREEN = [
    Binding("v", "cycle_view", "Running/failed/all", id="runs.view"),
    Binding("f", "cycle_goal", "Goal", id="runs.goal"),
    Binding("x", "stop_run", "Stop run…", id="stop_run"),
    Binding("R", "retry", "Retry", id="retry"),
]
OUTPUT_SCREEN = [
    Binding("f,end", "follow", "Follow", id="output.follow"),
    Binding("w", "wrap", "Wrap", id="output.wrap"),
]


def bind(
    node: DOMNode,
    bindings: Iterable[Binding],
    actions: Iterable[Binding] = (),
    *,
    read_only: bool = False,
) -> None:
    """Add bindings to one node instance, and ``actions`` unless the console is read-only
    (per instance, so read-only consoles lack them)."""
    for binding in Binding.make_bindings([*bindings, *([] if read_only else actions)]):
        node._bindings._add_binding(binding)


#: Bindings that can be active together (one focus chain each).
CHAINS = [
    *(APP + MAIN + safe + actions for _, safe, actions in PANE_KEYS),
    APP + [BACK, SCREEN_MAXIMIZE] + FAILED_SAFE + FAILURES_ACTIONS,
    APP + [BACK] + OUTPUT_SCREEN,
    APP + [BACK, SCREEN_MAXIMIZE] + THREADS_SCREEN_ACTIONS,
    APP + THREADS_SCREEN_ACTIONS + [LEAVE_BOX],
    APP + [BACK, SCREEN_MAXIMIZE] + LIST_NAV + [OUTPUT, COPY] + RUNS_SCREEN,
]


def keymap_conflicts(keymap: dict[str, str]) -> list[str]:
    """Remaps that put two bindings active together on one key (Textual drops one silently)."""
    if not keymap:  # every problem names a remapped binding: none without a keymap
        return []
    problems: set[str] = set()
    for chain in CHAINS:
        owners: dict[str, set[str]] = {}
        for binding in chain:
            remapped = binding.with_key(keymap.get(binding.id or "", binding.key))
            for key in {b.key for b in Binding.make_bindings([remapped])}:
                owners.setdefault(key, set()).add(binding.id or binding.action)
        for key, ids in owners.items():
            if len(ids) > 1 and ids & set(keymap):
                problems.add(f"keymap: {' and '.join(sorted(ids))} are both on '{key}'")
    return sorted(problems)


def clean_keymap(raw: object) -> tuple[dict[str, str], list[str]]:
    """Validate a ``keymap`` mapping from goalsui.yaml; returns (keymap, problems)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, ["keymap must be a mapping of binding id to key"]
    known = {b.id for chain in CHAINS for b in chain if b.id}
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, key in raw.items():
        if not isinstance(binding_id, str) or binding_id not in known:
            problems.append(f"keymap: unknown binding id {binding_id!r}")
            continue
        if not isinstance(key, str) or not key.strip() or len(key) > 60:
            problems.append(
                f"keymap: key for {binding_id!r} must be a key name like 'g' or 'ctrl+g'"
            )
            continue
        keymap[binding_id] = key.strip()
    return keymap, problems
