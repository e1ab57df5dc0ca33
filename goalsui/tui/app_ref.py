"""What the screens and widgets may ask of the console's app, typed as a protocol, so no
screen imports ``goalsui.tui.app``."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.dom import DOMNode

if TYPE_CHECKING:
    from goalsui.kb.confined import ConfinedTree
    from goalsui.service import Service
    from goalsui.tui.feed import DashboardFeed
    from goalsui.tui.fmt import Palette
    from goalsui.tui.notices import ConsoleNotice
    from goalsui.tui.runtime import ConsoleRuntime


class ConsoleHost(Protocol):
    """The console's state and services as the screens see them (``GoalsApp`` has them)."""

    service: Service
    #: False while the console shows the KB preview and the service is still opening
    service_ready: bool
    read_only: bool
    #: ``Z``: the panes keep what they show (the scheduler goes on)
    frozen: bool
    palette: Palette
    clock: Callable[[], datetime]
    notices: deque[ConsoleNotice]
    feed: DashboardFeed
    runtime: ConsoleRuntime

    @property
    def kb_readable(self) -> bool:
        """``kb_tree`` may be read: the service is open or the first records are on screen."""

    def act(self, done: str, call: Callable[..., Any], *args: Any) -> None: ...

    async def ready_service(self) -> Service: ...

    def kb_tree(self, goal_id: str) -> ConfinedTree: ...

    def open_output(self, run_id: int, title: str = "") -> None: ...

    def copy_id(self, value: str) -> None: ...

    def detail_shown(self, tab: Any, text: str) -> None: ...


def goals_app(node: DOMNode) -> ConsoleHost:
    """``node.app``: every screen and widget of the console runs inside a ``GoalsApp``."""
    return cast("ConsoleHost", node.app)
