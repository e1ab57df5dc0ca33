"""A secondary screen that loads its records off the UI thread and reloads when they change;
``m`` maximises a pane, and the title line shows the newest notice."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static

from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.messages import DashboardReady
from goalsui.tui.notices import NoticeAdded, WorkerFailures
from goalsui.tui.widgets.footer import Footer
from goalsui.tui.widgets.keyed_table import KeyedTable, Row
from goalsui.tui.widgets.status_bar import notice_line

if TYPE_CHECKING:
    from goalsui.service import Service
    from goalsui.tui.fmt import Palette


#: what one row of a screen's first table shows
Item = TypeVar("Item")


class DataScreen(WorkerFailures, Screen[None], Generic[Item]):
    """Subclasses implement ``fetch(service)`` (in a thread), ``show(data)`` (UI) and may
    ``describe()`` the selected row; the first table has the focus."""

    #: the title line's text (the newest notice follows it)
    HEADING = ""
    #: the first table's columns: label, key, width (None: as wide as its cells)
    COLUMNS: tuple[tuple[str, str, int | None], ...] = ()
    #: the pane whose subtitle counts the first table's rows ("": none)
    COUNT_IN = ""

    #: the screen's own keys: always, and those that change state (absent when read-only)
    SAFE: list[Binding] = []
    ACTIONS: list[Binding] = []

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only
        keys.bind(
            self, [keys.BACK, keys.SCREEN_MAXIMIZE, *self.SAFE], self.ACTIONS, read_only=read_only
        )
        #: row key -> the item the row shows (see :meth:`show_items`)
        self.row_items: dict[str, Item] = {}
        self._home: Widget | None = None  # where the focus goes when an input is left

    def compose(self) -> ComposeResult:
        yield Static(self._heading(), id="screen-title")
        yield from self.panes()
        yield Footer()

    def panes(self) -> ComposeResult:  # pragma: no cover - abstract
        """What the screen shows between its title line and its footer."""
        raise NotImplementedError

    def _heading(self) -> Text:
        return Text(f" {self.HEADING} ", style="bold reverse")

    def on_mount(self) -> None:
        table = self.query(KeyedTable).first()
        for label, key, width in self.COLUMNS:
            table.add_column(label, key=key, width=width)
        table.focus()
        self.reload()
        notices = goals_app(self).notices
        if notices:
            self.show_notice(notices[-1])

    def on_dashboard_ready(self, message: DashboardReady) -> None:
        """The records changed (the feed read them again): read this screen's again."""
        self.reload()

    @work(name="Reading the records", exclusive=True, group="screen-data", exit_on_error=False)
    async def reload(self) -> None:
        service = await goals_app(self).ready_service()  # a reading console opens it
        self.show(await asyncio.to_thread(self.fetch, service))

    def fetch(self, service: Service) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def show(self, data: Any) -> None:
        """Show what ``fetch`` read: by default a list of items, one row each."""
        self.show_items(data)

    def show_items(self, items: list[Item]) -> None:
        """One row per item (see ``row``) in the first table, in order; the cursor stays on
        its key. ``selected()`` returns the item under it."""
        app = goals_app(self)
        now, palette = app.clock(), app.palette
        rows = [self.row(item, now, palette) for item in items]
        self.row_items = {key: item for (key, _), item in zip(rows, items, strict=True)}
        self.query(KeyedTable).first().sync_rows(rows)
        if self.COUNT_IN:
            self.query_one(self.COUNT_IN).border_subtitle = str(len(rows))
        self.describe()

    def row(self, item: Item, now: datetime, palette: Palette) -> Row:  # pragma: no cover
        raise NotImplementedError

    def selected(self) -> Item | None:
        """The item of the first table's row under the cursor (None: no row)."""
        key = self.query(KeyedTable).first().cursor_key
        return self.row_items.get(key) if key else None

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        self.describe()

    def describe(self) -> None:
        """Show what the selected row holds (a screen with a detail pane)."""

    # -- the notice line (the title line's right-hand side) ----------------------------------
    def on_notice_added(self, message: NoticeAdded) -> None:
        self.show_notice(message.notice)

    def show_notice(self, notice: Any) -> None:
        app = goals_app(self)
        line = notice_line(notice, app.clock(), app.palette)
        text = Text.assemble(self._heading(), "  ", line, no_wrap=True, overflow="ellipsis")
        self.query_one("#screen-title", Static).update(text)

    # -- keys ---------------------------------------------------------------------------------
    def on_descendant_focus(self, event: Any) -> None:
        if not isinstance(event.widget, Input):
            self._home = event.widget

    def action_toggle_maximize(self) -> None:
        """Maximise the focused pane (its ``.pane`` box), or bring the layout back."""
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        if focused is None:
            return
        pane = next((w for w in focused.ancestors_with_self if w.has_class("pane")), focused)
        if isinstance(pane, Widget):
            self.maximized = pane

    def action_back(self) -> None:
        """Leave a text input (escape there never closes the screen), a maximised pane,
        then the screen."""
        if isinstance(self.focused, Input):
            home = self._home if self._home is not None and self._home.is_attached else None
            if home is not None and home.focusable:
                home.focus()
            else:
                self.set_focus(None)
            return
        if self.maximized is not None:
            self.minimize()
            return
        self.dismiss(None)
