"""The compose box under a thread's messages: write, Enter sends, the reply's state above."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from goalsui.domain.records import IntentRecord
from goalsui.domain.states import IntentStatus
from goalsui.domain.untrusted import plain
from goalsui.tui import keys
from goalsui.tui.fmt import Palette


class ComposeBox(Vertical):
    """An input that posts :class:`ComposeBox.Send` on Enter, and a reply status line;
    escape leaves the box, never the screen."""

    BINDINGS = [keys.LEAVE_BOX]

    DEFAULT_CSS = """
    ComposeBox { height: auto; padding: 0 1; }
    ComposeBox > #compose-status { height: auto; color: $text-muted; display: none; }
    ComposeBox > #compose-status.-shown { display: block; }
    ComposeBox > Input { margin: 0; }
    """

    @dataclass
    class Send(Message):
        """The operator pressed Enter on a non-empty message."""

        text: str

    def compose(self) -> ComposeResult:
        yield Static("", id="compose-status", markup=False)
        yield Input(
            placeholder="Write a message; Enter sends it and asks for a reply", id="compose-input"
        )

    @on(Input.Submitted, "#compose-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text:
            event.input.value = ""
            self.post_message(self.Send(text))

    def show_replies(self, pending: list[IntentRecord], palette: Palette) -> None:
        """The pending replies of the thread: running, due, or waiting to retry."""
        status = self.query_one("#compose-status", Static)
        status.set_class(bool(pending), "-shown")
        if not pending:
            status.update("")
            return
        text = Text()
        for intent in pending:
            if intent.status == IntentStatus.FIRING:
                text.append("⟳ replying", style=f"bold {palette.running}")
            elif intent.consecutive_failures:
                text.append(
                    f"↻ retrying after {intent.consecutive_failures} failed attempt(s)",
                    style=f"bold {palette.warning}",
                )
                if intent.last_error:
                    text.append(f": {plain(intent.last_error, limit=120)}")
            else:
                text.append("… reply due (waiting for the scheduler)", style=palette.muted)
            text.append(f" to “{plain(intent.instruction, limit=40)}” · ctrl+x cancels\n")
        text.rstrip()  # in place
        status.update(text)
