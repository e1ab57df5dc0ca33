"""The notice line under the status bar: the last alert, result or message, kept until
the next one (the event log, L, has them all)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from goalsui.tui.fmt import Palette, clock_time


class NoticeBar(Static):
    """One line: time, title and the first line of the last notice."""

    DEFAULT_CSS = """
    NoticeBar { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, id: str | None = "notice-bar") -> None:
        super().__init__("", id=id, markup=False)
        self.notice: Any = None

    def show(self, notice: Any, now: Any, palette: Palette, hint: str = "") -> None:
        self.notice = notice
        colour = {"error": palette.failed, "warning": palette.warning}.get(
            notice.severity, palette.text
        )
        text = Text.assemble(
            (clock_time(notice.at, now) + "  ", palette.muted),
            (notice.one_line, colour),
            (f"  {hint}" if hint else "", palette.muted),
        )
        text.no_wrap = True
        text.overflow = "ellipsis"
        self.update(text)
