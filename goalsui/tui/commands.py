"""The command palette: every console command as "Area: Verb", with its key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from goalsui.tui import keys


@dataclass(frozen=True)
class PaletteCommand:
    title: str  # "Area: Verb"
    help: str
    binding_id: str | None
    action: str  # an action on the main screen ("pause") or on the app ("app.freeze")
    changes_state: bool = False


COMMANDS = [
    PaletteCommand(
        "Intent: Pause or resume",
        "Pause or resume the selected goal, worker or intent",
        "pause",
        "pause",
        True,
    ),
    PaletteCommand(
        "Intent: Run now",
        "Fire the selected worker or intent once, now",
        "run_now",
        "run_now",
        True,
    ),
    PaletteCommand(
        "Run: Stop…",
        "Stop the selected running run (SIGTERM, then SIGKILL); the schedule goes on",
        "stop_run",
        "stop_run",
        True,
    ),
    PaletteCommand(
        "Intent: End schedule…",
        "End the selected intent's schedule (asks first; p reinstates it)",
        "end_schedule",
        "end_schedule",
        True,
    ),
    PaletteCommand(
        "Intent: Reinstate",
        "Bring an ended schedule back, planned from now",
        "pause",
        "pause",
        True,
    ),
    PaletteCommand(
        "Intent: Retry", "Retry the selected failed intent at once", "retry", "retry", True
    ),
    PaletteCommand(
        "Run: Dismiss", "Dismiss the selected failed or missed run", "dismiss", "dismiss", True
    ),
    PaletteCommand(
        "Run: Open output",
        "Show the selected run's full output, following its tail",
        "open_output",
        "open_output",
    ),
    PaletteCommand(
        "File: Edit in $EDITOR", "Edit the file shown in the detail pane", "edit", "edit", True
    ),
    PaletteCommand("Todo: Add", "Add a todo to the selected thread", "todo.add", "add_todo", True),
    PaletteCommand(
        "Todo: Complete or reopen", "Toggle the selected todo", "todo.toggle", "toggle_todo", True
    ),
    PaletteCommand("Pane: Filter", "Filter the focused pane as you type", "filter", "filter"),
    PaletteCommand(
        "Pane: Maximise or restore",
        "Fill the screen with the focused pane, and back",
        "maximize",
        "toggle_maximize",
    ),
    PaletteCommand("Pane: Goals", "Focus the goals pane", "pane.goals", "focus_pane('goals')"),
    PaletteCommand(
        "Pane: Threads", "Focus the threads pane", "pane.threads", "focus_pane('threads')"
    ),
    PaletteCommand(
        "Pane: Timeline", "Focus the timeline pane", "pane.timeline", "focus_pane('timeline')"
    ),
    PaletteCommand(
        "Pane: Failed runs", "Focus the failed runs pane", "pane.failed", "focus_pane('failed')"
    ),
    PaletteCommand("Pane: Detail", "Focus the detail pane", "pane.detail", "focus_pane('detail')"),
    PaletteCommand(
        "Screen: Failures",
        "Failed, missed, interrupted runs and auto-disabled intents",
        "screen.failures",
        "open_screen('failures')",
    ),
    PaletteCommand(
        "Screen: Morning reports",
        "Nightshift reports beside a timeline of the night",
        "screen.reports",
        "open_screen('reports')",
    ),
    PaletteCommand(
        "Screen: Events",
        "Received events and the intents they fired",
        "screen.events",
        "open_screen('events')",
    ),
    PaletteCommand(
        "Screen: Threads", "Threads and their messages", "screen.threads", "open_screen('threads')"
    ),
    PaletteCommand(
        "Screen: Event log",
        "What the operator and the scheduler did",
        "screen.journal",
        "open_screen('journal')",
    ),
    PaletteCommand(
        "Screen: Runs",
        "Every run, newest first: running, failed, by goal; stop and retry",
        "screen.runs",
        "open_screen('runs')",
    ),
    PaletteCommand(
        "Display: Freeze or unfreeze",
        "Stop updating the screen (the scheduler keeps running)",
        "freeze",
        "app.freeze",
    ),
    PaletteCommand(
        "Display: Refresh now", "Reload everything from the database", "refresh", "app.refresh_now"
    ),
    PaletteCommand(
        "Display: Next theme", "Cycle through the loaded themes", "theme", "app.next_theme"
    ),
    PaletteCommand("Help: Keys", "Every key, grouped", "help", "app.help"),
    PaletteCommand(
        "App: Quit", "Quit (asks first while this console runs the scheduler)", "quit", "app.quit"
    ),
]


def key_for(app: Any, binding_id: str | None) -> str:
    """The key a binding id is on now (after the keymap), for display."""
    if binding_id is None:
        return ""
    keymap: dict[str, str] = getattr(app, "_keymap", {}) or {}
    if binding_id in keymap:
        return keymap[binding_id].split(",")[0]
    for group in (
        keys.APP,
        keys.MAIN,
        keys.GOALS_ACTIONS,
        keys.GOALS_SAFE,
        keys.THREADS_ACTIONS,
        keys.FAILED_ACTIONS,
        keys.DETAIL_SAFE,
    ):
        for binding in group:
            if binding.id == binding_id:
                return binding.key_display or binding.key.split(",")[0]
    return ""


class GoalsCommands(Provider):
    """Console commands; state-changing ones are absent from a read-only console."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app: Any = self.app
        out: list[tuple[str, str, Callable[[], Any]]] = []
        for cmd in COMMANDS:
            if cmd.changes_state and app.read_only:
                continue
            key = key_for(app, cmd.binding_id)
            title = f"{cmd.title}  ({key})" if key else cmd.title
            out.append((title, cmd.help, partial(app.run_main_action, cmd.action)))
        for name in app.theme_names():
            out.append(
                (f"Theme: {name}", f"Switch to the {name} theme", partial(app.set_theme, name))
            )
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)
