"""Console notices: every ``notify`` goes to the notice line (a secondary screen's title
line) and the event log (``L``). There are no toasts: a toast covers a pane, whatever
its place, and the notice line already shows the newest message at every size.

The notice, the message that announces it (``NoticeAdded``) and the app's mixin live
here; this module delivers through :mod:`goalsui.tui.messages`, which does not import it.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rich.text import Text
from textual.message import Message

from goalsui.domain.untrusted import plain
from goalsui.tui.messages import deliver

#: How many notices the event log keeps (in memory, this console only).
KEEP = 500
_SEQ = itertools.count(1)


@dataclass(frozen=True)
class ConsoleNotice:
    """One notification: what it said, how bad, when (the app's clock)."""

    message: str  # plain text (markup removed)
    title: str
    severity: str  # information | warning | error
    at: datetime
    seq: int = field(default_factory=lambda: next(_SEQ))

    @property
    def one_line(self) -> str:
        text = " ".join(self.message.split())
        return f"{self.title}: {text}" if self.title else text


class NoticeAdded(Message, bubble=False):
    """A notification was recorded: the notice line shows the newest."""

    def __init__(self, notice: ConsoleNotice) -> None:
        super().__init__()
        self.notice = notice


def _plain_message(message: str, markup: bool) -> str:
    if not markup:
        return plain(message)
    try:
        return plain(Text.from_markup(message).plain)
    except Exception:  # noqa: BLE001 - bad markup: show it as it is
        return plain(message)


class NoticeMixin:
    """Mixed into the app before ``App``: ``notify`` records and shows, never toasts."""

    notices: deque[ConsoleNotice]

    def init_notices(self) -> None:
        self.notices = deque(maxlen=KEEP)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Thread-safe like ``App.notify``: the notice is applied on the app's loop."""
        app: Any = self
        notice = ConsoleNotice(_plain_message(message, markup), title, str(severity), app.clock())
        deliver(app, self.apply_notice, notice)

    def apply_notice(self, notice: ConsoleNotice) -> None:
        self.notices.append(notice)
        self.notice_changed(notice)

    def notice_changed(self, notice: ConsoleNotice) -> None:
        """Show ``notice`` in the notice line (the app overrides it)."""
