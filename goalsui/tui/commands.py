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
    binding_id: str
    action: str  # an action on the main screen ("pause") or on the app ("app.freeze")
    changes_state: bool = False


#: title | binding id (its key is shown) | action | help; a leading "!" marks a command that
#: changes state (absent from a read-only console).
_TABLE = """
!Intent: Pause or resume | pause | pause | Pause or resume the selected goal, worker or intent
!Intent: Run now | run_now | run_now | Fire the selected worker or intent once, now
!Run: Stop… | stop_run | stop_run | Stop the selected running run (SIGTERM, then SIGKILL); the schedule goes on
!Intent: End schedule… | end_schedule | end_schedule | End the selected intent's schedule (asks first; p reinstates it)
!Intent: Reinstate | pause | pause | Bring an ended schedule back, planned from now
!Intent: Retry | retry | retry | Retry the selected failed intent at once
!Run: Dismiss | dismiss | dismiss | Dismiss the selected failed or missed run
Run: Open output | open_output | open_output | Show the selected run's full output, following its tail
!File: Edit in $EDITOR | edit | edit | Edit the file shown in the detail pane
!Todo: Add | todo.add | add_todo | Add a todo to the selected thread
!Todo: Complete or reopen | todo.toggle | toggle_todo | Toggle the selected todo
Pane: Filter | filter | filter | Filter the focused pane as you type
Pane: Maximise or restore | maximize | toggle_maximize | Fill the screen with the focused pane, and back
Pane: Goals | pane.goals | focus_pane('goals') | Focus the goals pane
Pane: Threads | pane.threads | focus_pane('threads') | Focus the threads pane
Pane: Timeline | pane.timeline | focus_pane('timeline') | Focus the timeline pane
Pane: Failed runs | pane.failed | focus_pane('failed') | Focus the failed runs pane
Pane: Detail | pane.detail | focus_pane('detail') | Focus the detail pane
Screen: Failures | screen.failures | app.open_screen('failures') | Failed, missed, interrupted runs and auto-disabled intents
Screen: Morning reports | screen.reports | app.open_screen('reports') | Nightshift reports beside a timeline of the night
Screen: Events | screen.events | app.open_screen('events') | Received events and the intents they fired
Screen: Threads | screen.threads | app.open_screen('threads') | Threads and their messages
Screen: Event log | screen.journal | app.open_screen('journal') | What the operator and the scheduler did
Screen: Runs | screen.runs | app.open_screen('runs') | Every run, newest first: running, failed, by goal; stop and retry
Display: Freeze or unfreeze | freeze | app.freeze | Stop updating the screen (the scheduler keeps running)
Display: Refresh now | refresh | app.refresh_now | Reload everything from the database
Display: Next theme | theme | app.next_theme | Cycle through the loaded themes
Help: Keys | help | app.help | Every key, grouped
App: Quit | quit | app.quit | Quit (asks first while this console runs the scheduler)
"""
COMMANDS = [
    PaletteCommand(title.lstrip("!"), help_, binding_id, action, title.startswith("!"))
    for title, binding_id, action, help_ in (
        [part.strip() for part in line.split(" | ")] for line in _TABLE.strip().splitlines()
    )
]


def key_for(app: Any, binding_id: str) -> str:
    """The key a binding id is on now (after the keymap), for display."""
    keymap: dict[str, str] = getattr(app, "_keymap", {}) or {}
    if binding_id in keymap:
        return keymap[binding_id].split(",")[0]
    found = (b for chain in keys.CHAINS for b in chain if b.id == binding_id)
    return next((b.key_display or b.key.split(",")[0] for b in found), "")


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
        for name in app.theme_names:
            switch = partial(setattr, app, "theme", name)
            out.append((f"Theme: {name}", f"Switch to the {name} theme", switch))
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
