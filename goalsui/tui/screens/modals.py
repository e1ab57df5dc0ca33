"""Small modal screens: confirm (focus on the safe choice), text input, help (the keys active
now, every main-screen pane's keys, the symbols the panes draw)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from goalsui.domain.untrusted import plain
from goalsui.tui import keys
from goalsui.tui.fmt import INTENT_GLYPH, RUN_GLYPH


class ConfirmScreen(ModalScreen[bool]):
    """Yes/No with labelled keys; focus starts on the safe "No"."""

    BINDINGS = [
        Binding("y", "dismiss(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "dismiss(False)", "No", id="confirm.no"),
        Binding(
            "left,right,tab,shift+tab", "toggle_focus", "Switch", id="confirm.switch", show=False
        ),
    ]
    AUTO_FOCUS = "#no"

    def __init__(
        self, question: str, detail: str = "", *, yes: str = "Yes", no: str = "No"
    ) -> None:
        super().__init__()
        self.question, self.detail, self.yes, self.no = question, detail, yes, no

    @classmethod
    def ask(
        cls, node: DOMNode, question: str, detail: str, then: Callable[[], Any], **answers: str
    ) -> None:
        """Ask over ``node``'s app; ``then()`` on yes."""
        node.app.push_screen(cls(question, detail, **answers), lambda yes: then() if yes else None)

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Label(Text(plain(self.question), style="bold"), id="confirm-question")
            if self.detail:
                yield Label(Text(plain(self.detail)), id="confirm-detail")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.no}  \\[n]", id="no", variant="primary")
                yield Button(f"{self.yes}  \\[y]", id="yes", variant="error")

    def action_toggle_focus(self) -> None:
        no = self.query_one("#no", Button)
        (self.query_one("#yes", Button) if no.has_focus else no).focus()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class TextInputScreen(ModalScreen[str | None]):
    """One line of text (e.g. a new todo); enter accepts, escape cancels."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel", id="input.cancel")]
    AUTO_FOCUS = "Input"

    def __init__(self, title: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder = title, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="input-box", classes="modal-box"):
            yield Label(Text(self.title_text, style="bold"))
            yield Input(placeholder=self.placeholder, id="text-input")
            yield Label(Text("enter: add   escape: cancel", style="dim"))

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


class HelpScreen(ModalScreen[None]):
    """Keys grouped: this pane, global, navigation."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close")]

    def __init__(self, title: str, groups: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.title_text = title
        self.groups = groups

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="modal-box"):
            yield Label(
                Text.assemble(
                    (self.title_text, "bold"),
                    ("   escape, q or ? closes this · ctrl+p: every command by name", "dim"),
                ),
                id="help-title",
            )
            with VerticalScroll(id="help-scroll"):
                for name, rows in self.groups:
                    if not rows:
                        continue
                    text = Text()
                    text.append(name + "\n", style="bold underline")
                    for key, description in rows:
                        text.append(f"  {key:>12}  ", style="bold")
                        text.append(description + "\n")
                    yield Static(text, classes="help-group")
            yield Label(Text("escape / q / ?: close", style="dim"), id="help-close")


#: Symbols drawn by the panes beyond the run and intent glyphs.
_OTHER_SYMBOLS: list[tuple[str, str]] = [
    ("◆", "timeline: next planned fire"),
    ("▲", "timeline: overlap predicted (a fire while the last run may still run)"),
    ("┃", "timeline: now"),
    ("▸ ▾", "goals: collapsed / expanded"),
    ("☐ ☑", "threads: open / done todo"),
    ("⚠", "goals: KB error in the goal's files"),
    ("✉ new", "goals: a new file in the worker's outbox"),
    ("▁▂▃▄▅▆▇", "detail: recent runs' cost or duration; scrollbars"),
    ("…", "text clipped: Detail (5) or m (maximise) shows it whole"),
]


def legend() -> list[tuple[str, str]]:
    """Every symbol the panes use: run and intent glyphs (from fmt) and the rest."""
    meanings: dict[str, list[str]] = {}
    for kind, glyphs in (("run", RUN_GLYPH), ("intent", INTENT_GLYPH)):
        for status, glyph in glyphs.items():
            meanings.setdefault(glyph, []).append(f"{kind} {status}")
    rows = [(glyph, ", ".join(what)) for glyph, what in meanings.items()]
    return rows + _OTHER_SYMBOLS


def pane_sections(app: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """One section per pane, read-only consoles without actions."""
    sections = []
    for title, safe, actions in keys.PANE_KEYS:
        rows: dict[str, dict[str, None]] = {}  # description -> its keys (an ordered set)
        for binding in [*safe, *([] if app.read_only else actions)]:
            if binding.description:
                rows.setdefault(binding.description, {})[app.get_key_display(binding)] = None
        sections.append((title, [(", ".join(k), d) for d, k in rows.items()]))
    return sections


def help_groups(app: App[Any], *, every_pane: bool) -> list[tuple[str, list[tuple[str, str]]]]:
    """This pane / global / navigation, from the bindings active now; ``every_pane`` (the
    main screen): every pane's keys and every symbol, too."""
    screen = app.screen
    rows: dict[tuple[str, str], dict[str, None]] = {}  # (group, description) -> keys
    for _key, active in screen.active_bindings.items():
        binding, node = active.binding, active.node
        if not binding.description or binding.system:
            continue
        if binding.id is None and node in (app, screen):
            continue  # Textual's own screen/app keys (copy text, ...)
        bid = binding.id or ""
        if bid.startswith(("nav.", "pane.")) or binding.action.startswith(
            ("cursor_", "scroll_", "page_", "app.focus")
        ):
            group = "Navigation"
        elif node is app or node is screen:
            group = "Global"
        else:
            group = "This pane"
        rows.setdefault((group, binding.description), {})[app.get_key_display(binding)] = None
    groups = [
        (name, [(", ".join(found), what) for (group, what), found in rows.items() if group == name])
        for name in ("This pane", "Global", "Navigation")
    ]
    if every_pane:
        groups += [*pane_sections(app), ("Symbols", legend())]
    return groups
