"""The status bar (scheduler, counts, freshness, filter, frozen, read-only, watcher) and the
notice line under it (the last notice, kept until the next one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Static

from goalsui.domain.states import SchedulerState
from goalsui.tui.fmt import Palette, clock_time, short_span


@dataclass
class StatusInfo:
    scheduler: str = "off"  # running | starting | stopped | off | error: ...
    running: int = 0
    due: int = 0
    failed: int = 0
    goal_errors: int = 0
    refreshed_s: float | None = None
    filter: str = ""
    frozen: bool = False
    read_only: bool = False
    watcher: str = "off"
    loading: bool = False  # the records are not loaded yet
    today: str = ""  # what today's runs reported ("" until one did)


class StatusBar(Static):
    """One line at the top of the main screen."""

    DEFAULT_CSS = "StatusBar { height: 1; background: $panel; padding: 0 1; }"

    def __init__(self, id: str | None = "status") -> None:
        super().__init__("", id=id, markup=False)
        self.info = StatusInfo()
        self.palette = Palette()
        self._shown: Text | None = None

    def show(self, info: StatusInfo, palette: Palette) -> None:
        """Show ``info``; the same as shown (or as painted at first) changes nothing."""
        if info == self.info and palette == self.palette:
            return
        self.info, self.palette = info, palette
        text = self.render()
        if text != self._shown:  # the age is a float: the same line most seconds
            self._shown = text
            self.refresh()  # one line of fixed height: no layout pass

    def on_resize(self) -> None:
        self._shown = None
        self.refresh()

    def render(self) -> Text:
        text = self._compose_text(compact=False)
        if self.size.width and text.cell_len > self.size.width - 2:
            text = self._compose_text(compact=True)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _compose_text(self, *, compact: bool) -> Text:
        """Scheduler, counts, freshness (or "loading…" in its slot, so the line keeps its
        length), today's spend, watch, filter, frozen, read-only; ``compact``: short words."""
        i, p = self.info, self.palette

        def say(full: str, short: str = "") -> str:
            return short if compact else full

        sep = (say("  │  ", " │ "), p.muted)
        sched = p.ok if i.scheduler == SchedulerState.RUNNING else p.warning
        if i.scheduler.startswith("error"):
            sched = p.failed
        parts = [
            (say("goalsui "), "bold"),
            (say("scheduler ", "sched "), p.muted),
            (say(i.scheduler, i.scheduler.split(" (")[0]), f"bold {sched}"),
            sep,
            (f"▶ {i.running}" + say(" running"), f"bold {p.running}" if i.running else p.muted),
            ("  ", ""),
            (f"{i.due} due", p.accent if i.due else p.muted),
            ("  ", ""),
            (f"✗ {i.failed}" + say(" failed"), f"bold {p.failed}" if i.failed else p.muted),
        ]
        if i.goal_errors:
            errors = f"⚠ {i.goal_errors}" + say(f" KB error{'s' if i.goal_errors > 1 else ''}")
            parts += [("  ", ""), (errors, f"bold {p.failed}")]
        if i.loading:
            parts += [sep, (say("records ", "↻ "), p.muted), ("loading…", p.warning)]
        else:
            age = "-" if i.refreshed_s is None else short_span(i.refreshed_s) + say(" ago")
            stale = i.refreshed_s is not None and i.refreshed_s > 5
            parts += [
                sep,
                (say("refreshed ", "↻ "), p.muted),
                (age, p.warning if stale else p.text),
            ]
        if i.today:
            parts += [sep, (say("today "), p.muted), (i.today, p.text)]
        watch = p.ok if i.watcher in ("ok", "polling") else p.warning
        parts += [sep, ("watch ", p.muted), (i.watcher, watch)]
        if i.filter:
            parts += [sep, ("filter ", p.muted), (i.filter, f"bold {p.accent}")]
        if i.frozen:
            parts += [sep, (" FROZEN ", f"bold reverse {p.warning}")]
        if i.read_only:
            parts += [sep, (" READ-ONLY ", f"bold reverse {p.accent}")]
        return Text.assemble(*parts)


def notice_line(notice: Any, now: Any, palette: Palette) -> Text:
    """Time, title and the first line of a notice, coloured by its severity."""
    colour = {"error": palette.failed, "warning": palette.warning}.get(notice.severity)
    return Text.assemble(
        (clock_time(notice.at, now) + "  ", palette.muted),
        (notice.one_line, colour or palette.text),
        no_wrap=True,
        overflow="ellipsis",
    )


class NoticeBar(Static):
    """One line: the last notice (the event log, L, has them all)."""

    DEFAULT_CSS = "NoticeBar { height: 1; background: $panel; padding: 0 1; }"

    def __init__(self, id: str | None = "notice-bar") -> None:
        super().__init__("", id=id, markup=False)
        self.notice: Any = None

    def show(self, notice: Any, now: Any, palette: Palette) -> None:
        self.notice = notice
        self.update(notice_line(notice, now, palette))
