"""The Detail pane: the selected item's files, or a run's output tailed live."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from goalsui.domain.untrusted import plain
from goalsui.tui import keys
from goalsui.tui.widgets.cost_panel import CostPanel

if TYPE_CHECKING:
    from goalsui.domain.budget import RunPoint


@dataclass(frozen=True)
class DetailTab:
    """One thing the detail pane can show: a KB file, a run's output, or fixed text."""

    label: str
    goal_id: str | None = None
    rel: str | None = None
    run_id: int | None = None
    text: str | None = None
    thread_id: int | None = None


class DetailBody(VerticalScroll, can_focus=True):
    """The scrolling body; focus lands here so the pane's keys apply."""

    DEFAULT_CSS = """
    DetailBody { height: 1fr; }
    DetailBody > Static { width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="detail-text", markup=False)


class TabStrip(Static):
    """One line of file names; the active one is highlighted. Click or ``[``/``]``."""

    DEFAULT_CSS = "TabStrip { height: 1; color: $text-muted; }"

    @dataclass
    class Picked(Message):
        index: int

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._spans: list[tuple[int, int]] = []

    def show(self, labels: list[str], active: int) -> None:
        text = Text()
        self._spans = []
        for index, label in enumerate(labels):
            if index:
                text.append(" │ ", style="dim")
            start = text.cell_len
            text.append(f" {label} ", style="bold reverse" if index == active else "")
            self._spans.append((start, text.cell_len))
        self.update(text)

    def on_click(self, event: events.Click) -> None:
        for index, (start, end) in enumerate(self._spans):
            if start <= event.x < end:
                self.post_message(TabStrip.Picked(index))
                return


class DetailView(Vertical):
    """Title, a strip of file names, and the body."""

    @dataclass
    class TabChanged(Message):
        """The operator picked another file of the same selection."""

        view: DetailView

    DEFAULT_CSS = """
    DetailView { height: 1fr; }
    DetailView > #detail-title { height: 1; color: $text-muted; }
    """

    def __init__(self, *, read_only: bool = False, id: str | None = "detail") -> None:
        super().__init__(id=id)
        keys.bind(self, keys.DETAIL_SAFE, keys.DETAIL_ACTIONS, read_only=read_only)
        self.tabs: list[DetailTab] = []
        self.active = 0
        self.title_text = ""
        self.shown: tuple[DetailTab | None, str] = (None, "")

    def compose(self) -> ComposeResult:
        yield Static("", id="detail-title", markup=False)
        yield TabStrip(id="detail-tabs")
        yield DetailBody(id="detail-body")  # the cost panel comes with the first runs to show

    async def show_costs(self, intent_id: int | None, points: Sequence[RunPoint] | None) -> None:
        """The runs of ``intent_id`` in the cost panel, mounted the first time it has some."""
        if not self.query(CostPanel):
            if intent_id is None or points is None:
                return
            await self.mount(CostPanel(id="detail-cost"), before="#detail-body")
        self.query_one(CostPanel).show(intent_id, points)

    @property
    def current(self) -> DetailTab | None:
        return self.tabs[self.active] if 0 <= self.active < len(self.tabs) else None

    def set_tabs(self, title: str, tabs: list[DetailTab]) -> bool:
        """Show a new selection; returns True when the tab set changed."""
        if tabs == self.tabs and title == self.title_text:
            return False
        old = self.current
        self.title_text = title
        self.query_one("#detail-title", Static).update(
            Text(plain(title), no_wrap=True, overflow="ellipsis")
        )
        self.tabs = tabs
        labels = [t.label for t in tabs]  # the same file stays open when it is still there
        self.active = labels.index(old.label) if old is not None and old.label in labels else 0
        self.query_one(TabStrip).show(labels, self.active)
        return True

    def on_tab_strip_picked(self, event: TabStrip.Picked) -> None:
        event.stop()
        self._activate(event.index)

    def action_cycle_file(self, delta: int) -> None:
        if self.tabs:
            self._activate((self.active + delta) % len(self.tabs))

    def _activate(self, index: int) -> None:
        if index == self.active or not 0 <= index < len(self.tabs):
            return
        self.active = index
        self.query_one(TabStrip).show([t.label for t in self.tabs], index)
        self.post_message(DetailView.TabChanged(self))

    def set_body(self, tab: DetailTab | None, text: str, *, follow: bool = False) -> None:
        """Show ``text`` (untrusted: rendered plain). ``follow`` keeps the view at the end."""
        if self.shown == (tab, text):
            return
        body = self.query_one(DetailBody)
        at_end = body.is_vertical_scroll_end or body.max_scroll_y == 0
        same_tab = self.shown[0] == tab
        self.shown = (tab, text)
        self.query_one("#detail-text", Static).update(Text(plain(text) or "(empty)"))
        if follow and (at_end or not same_tab):
            body.call_after_refresh(body.scroll_end, animate=False)
        elif not same_tab:
            body.scroll_home(animate=False)
