"""A screen that loads its records off the UI thread and reloads when data changes.

Every such screen shares the console's habits: ``m`` maximises the focused pane (and
brings the layout back), ``escape`` in a text input leaves the input (never the
screen), and the title line shows the newest notice on the right (the notice line of
these screens: toasts would cover a pane).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import clock_time
from goalsui.tui.messages import DashboardReady
from goalsui.tui.notices import NoticeAdded, WorkerFailures

if TYPE_CHECKING:
    from goalsui.service import Service


class DataScreen(WorkerFailures, Screen[None]):
    """Subclasses implement ``fetch(service)`` (in a thread) and ``show(data)`` (UI)."""

    def __init__(self) -> None:
        super().__init__()
        keys.bind(self, [keys.BACK, keys.SCREEN_MAXIMIZE])
        self._title: Text | None = None  # the title line's own text, before any notice
        self._home: Widget | None = None  # where the focus goes when an input is left

    def on_mount(self) -> None:
        self.reload()
        app: Any = self.app
        notices = getattr(app, "notices", None)
        if notices:
            self.show_notice(notices[-1])

    def on_dashboard_ready(self, message: DashboardReady) -> None:
        """The records changed (the feed read them again): read this screen's again."""
        self.reload()

    @work(name="Reading the records", exclusive=True, group="screen-data", exit_on_error=False)
    async def reload(self) -> None:
        self.show(await asyncio.to_thread(self.fetch, goals_app(self).service))

    def fetch(self, service: Service) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def show(self, data: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the notice line (the title line's right-hand side) ----------------------------------
    def on_notice_added(self, message: NoticeAdded) -> None:
        self.show_notice(message.notice)

    def show_notice(self, notice: Any) -> None:
        titles = self.query("#screen-title")
        if not titles:
            return
        title = titles.first(Static)
        if self._title is None:
            content = title.content
            self._title = content.copy() if isinstance(content, Text) else Text(str(content))
        app: Any = self.app
        palette = app.palette
        colour = {"error": palette.failed, "warning": palette.warning}.get(
            notice.severity, palette.text
        )
        text = self._title.copy()
        text.append("  ")
        text.append(clock_time(notice.at, app.clock()) + "  ", style=palette.muted)
        text.append(notice.one_line, style=colour)
        text.no_wrap = True
        text.overflow = "ellipsis"
        title.update(text)

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
