"""A screen that loads its records off the UI thread and reloads when data changes."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.screen import Screen
from textual.worker import get_current_worker

from goalsui.errors import GoalsuiError
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.messages import DashboardReady, DeliverMixin, deliver


class DataScreen(DeliverMixin, Screen[None]):
    """Subclasses implement ``fetch(service)`` (in a thread) and ``show(data)`` (UI)."""

    def __init__(self) -> None:
        super().__init__()
        keys.bind(self, [keys.BACK])

    def on_mount(self) -> None:
        self.reload()

    def on_dashboard_ready(self, message: DashboardReady) -> None:
        """The records changed (the feed read them again): read this screen's again."""
        self.reload()

    @work(thread=True, exclusive=True, group="screen-data", exit_on_error=False)
    def reload(self) -> None:
        try:
            data = self.fetch(goals_app(self).service)
        except GoalsuiError as exc:
            deliver(self, self.notify, str(exc), severity="error")
            return
        if not get_current_worker().is_cancelled:
            deliver(self, self.show, data)

    def fetch(self, service: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def show(self, data: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def action_back(self) -> None:
        self.dismiss(None)
