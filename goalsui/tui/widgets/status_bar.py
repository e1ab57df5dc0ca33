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
    scheduler: str = "off"  # running | starting | stopped | off | not available | error: ...
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
        self.renderable_set = False
        self._shown: Text | None = None

    def show(self, info: StatusInfo, palette: Palette) -> None:
        if info == self.info and palette == self.palette and self.renderable_set:
            return
        self.info, self.palette = info, palette
        self.renderable_set = True
        text = self.render_info()
        if text != self._shown:  # the age is a float: the same line most seconds
            self._shown = text
            self.refresh()  # one line of fixed height: no layout pass

    def render(self) -> Text:
        return self.render_info()

    def on_resize(self) -> None:
        self._shown = None
        self.refresh()

    def render_info(self) -> Text:
        text = self._compose_text(compact=False)
        if self.size.width and text.cell_len > self.size.width - 2:
            text = self._compose_text(compact=True)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _compose_text(self, *, compact: bool) -> Text:
        i, p = self.info, self.palette
        sep = (" │ " if compact else "  │  ", p.muted)
        parts = self._counts(compact, sep)
        parts.append(sep)
        parts += self._freshness(compact, sep)
        parts += [
            sep,
            ("watch ", p.muted),
            (i.watcher, p.ok if i.watcher in ("ok", "polling") else p.warning),
        ]
        if i.filter:
            parts += [sep, ("filter ", p.muted), (i.filter, f"bold {p.accent}")]
        if i.frozen:
            parts += [sep, (" FROZEN ", f"bold reverse {p.warning}")]
        if i.read_only:
            parts += [sep, (" READ-ONLY ", f"bold reverse {p.accent}")]
        return Text.assemble(*parts)

    def _counts(self, compact: bool, sep: tuple[str, str]) -> list[tuple[str, str]]:
        """The scheduler's state, then running, due, failed and KB-error counts."""
        i, p = self.info, self.palette
        sched_colour = p.ok if i.scheduler == SchedulerState.RUNNING else p.warning
        if i.scheduler.startswith("error"):
            sched_colour = p.failed
        scheduler = i.scheduler.split(" (")[0] if compact else i.scheduler
        parts: list[tuple[str, str]] = []
        if not compact:
            parts.append(("goalsui ", "bold"))
        parts += [
            ("sched " if compact else "scheduler ", p.muted),
            (scheduler, f"bold {sched_colour}"),
            sep,
            (
                f"▶ {i.running}" + ("" if compact else " running"),
                f"bold {p.running}" if i.running else p.muted,
            ),
            ("  ", ""),
            (f"{i.due} due", p.accent if i.due else p.muted),
            ("  ", ""),
            (
                f"✗ {i.failed}" + ("" if compact else " failed"),
                f"bold {p.failed}" if i.failed else p.muted,
            ),
        ]
        if i.goal_errors:
            label = f"⚠ {i.goal_errors}" + (
                "" if compact else f" KB error{'s' if i.goal_errors > 1 else ''}"
            )
            parts += [("  ", ""), (label, f"bold {p.failed}")]
        return parts

    def _freshness(self, compact: bool, sep: tuple[str, str]) -> list[tuple[str, str]]:
        """The refresh age (or "loading…" in its slot) and today's spend."""
        i, p = self.info, self.palette
        age = (
            "-"
            if i.refreshed_s is None
            else short_span(i.refreshed_s) + ("" if compact else " ago")
        )
        stale = i.refreshed_s is not None and i.refreshed_s > 5
        parts: list[tuple[str, str]]
        if i.loading:  # in the slot of the refresh age, so the line keeps its length
            parts = [("↻ " if compact else "records ", p.muted), ("loading…", p.warning)]
        else:
            parts = [
                ("↻ " if compact else "refreshed ", p.muted),
                (age, p.warning if stale else p.text),
            ]
        if i.today:
            parts += [sep, ("today " if not compact else "", p.muted), (i.today, p.text)]
        return parts


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
