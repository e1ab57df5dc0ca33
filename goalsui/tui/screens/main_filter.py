"""The main screen's filter: ``/`` filters the focused pane live, enter keeps the filter,
escape clears it."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.containers import Horizontal
from textual.widgets import Input, Label

from goalsui.tui.screens.main_panes import PanesScreen
from goalsui.tui.widgets.footer import Footer


class FilterPart(PanesScreen):
    """The filter bar (mounted after the first frame) and each pane's filter text."""

    #: the pane the open filter bar filters (None: the bar is closed)
    filter_target: str | None = None
    _filter_mount: Any = None

    def mount_filter_bar(self) -> Any:
        """Mount the (hidden) filter bar once; awaitable until its parts are in place."""
        if self._filter_mount is None:
            field = Input(
                placeholder="type to filter, enter to keep, escape to clear", id="filter-input"
            )
            bar = Horizontal(Label("filter", id="filter-label"), field, id="filter-bar")
            self._filter_mount = self.mount(bar, before=self.query_one(Footer))
        return self._filter_mount

    async def action_filter(self) -> None:
        await self.mount_filter_bar()
        target = self.pane if self.pane != "detail" else "goals"
        self.filter_target = target
        bar = self.query_one("#filter-bar")
        bar.display = True
        bar.query_one(Label).update(f"filter {target}:")
        field = bar.query_one(Input)
        field.value = getattr(self.pane_widget(target), "filter_text", "")
        # Focus now, not on the next loop turn: keys typed right after '/' go to the field.
        self.set_focus(field)

    @on(Input.Changed, "#filter-input")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self.filter_target is not None:
            self.set_filter(self.filter_target, event.value.strip())

    @on(Input.Submitted, "#filter-input")  # enter keeps the filter
    def _close_filter(self) -> None:
        bar = self.query_one("#filter-bar")
        target = self.filter_target or "goals"
        self.filter_target = None
        self.set_focus(self.pane_widget(target))
        bar.display = False

    def set_filter(self, pane: str, text: str) -> None:
        widget = self.pane_widget(pane)
        widget.filter_text = text  # type: ignore[attr-defined]  # every pane widget filters
        if self.dash is not None:
            self.apply(self.dash)

    def action_clear_filter(self) -> None:
        if self.filter_target is not None:
            self.set_filter(self.filter_target, "")
            self._close_filter()
            return
        pane = self.pane if self.pane != "detail" else "goals"
        if getattr(self.pane_widget(pane), "filter_text", ""):
            self.set_filter(pane, "")

    def on_key(self, event: Any) -> None:
        if event.key == "escape" and self.filter_target is not None:
            event.stop()
            self.action_clear_filter()

    def filter_summary(self) -> str:
        """The filters in force, for the status bar (``goals:'x' failed:'y'``)."""
        panes = ("goals", "threads", "timeline", "failed")
        texts = {pane: getattr(self.pane_widget(pane), "filter_text", "") for pane in panes}
        return " ".join(f"{pane}:'{text}'" for pane, text in texts.items() if text)
