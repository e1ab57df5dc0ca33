"""The console's messages: what the app, the feed and the runtime tell the screens."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from goalsui.kb.watcher import KBChanges
    from goalsui.tui.model import Dashboard, PlanView


class Coalescing(Message, bubble=False):
    """A message made moot by a newer one of the same type queued behind it: a burst of
    reloads costs one repaint, with the newest data."""

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


@dataclass
class DashboardReady(Coalescing):
    """Fresh records (or the KB preview) for the screens; from the feed."""

    dashboard: Dashboard


@dataclass
class PlanReady(Coalescing):
    """A fresh plan of the next fires for the timeline; from the feed."""

    plan: PlanView


class MainMounted(Message):
    """The main screen has its panes; bubbles up to the app, which may send data now."""


@dataclass
class DashboardShown(Message):
    """The main screen painted a dashboard; bubbles up to the app (first paint, records)."""

    preview: bool


@dataclass
class Tick(Coalescing):
    """The once-a-second tick: countdowns, running timers, the refresh age."""

    now: datetime


class PaletteChanged(Coalescing):
    """The theme changed: repaint what carries the palette's colours."""


@dataclass
class DisplayFrozen(Message, bubble=False):
    """``Z``: the display froze (or thawed: show what came meanwhile)."""

    frozen: bool


@dataclass
class WatcherBatch(Message, bubble=False):
    """A batch of KB file changes from the watcher: reload what shows them."""

    batch: KBChanges


class ServiceOpened(Message, bubble=False):
    """The service is open (the console started on the KB preview): load what waited."""


class RecordsOnScreen(Message, bubble=False):
    """The first records are on screen before the service is open (a console that only
    reads): read the KB files that waited, as they need no service."""


@dataclass
class ShowGoal(Message, bubble=False):
    """Select and focus a goal in the goals pane (``J`` on a goal's notification)."""

    goal_id: str


@dataclass
class RefreshWanted(Message, bubble=False):
    """Read the records again after ``delay`` (posted from any thread: a service or
    scheduler event); the app schedules the read on its loop."""

    delay: float
