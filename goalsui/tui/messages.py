"""Messages that carry results from worker threads to the UI (post_message is thread-safe)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump


class Deliver(Message, bubble=False):
    """Run ``callback(*args)`` on the receiver's loop; never blocks the sending thread."""

    def __init__(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.callback = callback
        self.args = args
        self.kwargs = kwargs


def deliver(target: MessagePump, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Post ``callback(*args, **kwargs)`` to ``target`` from any thread (dropped once it is gone)."""
    target.post_message(Deliver(callback, *args, **kwargs))


class DeliverMixin:
    """Add to a screen or app so :class:`Deliver` messages run their callback."""

    def on_deliver(self, message: Deliver) -> None:
        message.stop()
        message.callback(*message.args, **message.kwargs)


class DashboardReady(Message, bubble=False):
    """A fresh dashboard (and maybe a plan) for the main screen."""

    def __init__(self, dashboard: Any) -> None:
        super().__init__()
        self.dashboard = dashboard
