"""Console notices: every ``notify`` goes to the notice line and the event log (``L``),
never to a toast (a toast covers a pane)."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerState

from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError

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


@dataclass
class NoticeAdded(Message, bubble=False):
    """A notification: the app records it, the screens' notice lines show the newest."""

    notice: ConsoleNotice


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
        timeout: float | None = None,  # no toasts: accepted for Textual's own callers
        markup: bool = True,
    ) -> None:
        """Thread-safe like ``App.notify``: the notice is recorded on the app's loop."""
        app: Any = self
        notice = ConsoleNotice(_plain_message(message, markup), title, str(severity), app.clock())
        app.post_message(NoticeAdded(notice))

    def on_notice_added(self, message: NoticeAdded) -> None:
        self.notices.append(message.notice)
        self.notice_changed(message.notice)

    def notice_changed(self, notice: ConsoleNotice) -> None:
        """Show ``notice`` in the notice line (the app overrides it)."""


def failure_text(error: BaseException | None) -> str:
    """What went wrong, on one line: a goalsui error says it itself, others name their type."""
    text = str(error) if isinstance(error, GoalsuiError) else f"{type(error).__name__}: {error}"
    return plain(" ".join(text.split()), limit=300)


class WorkerFailures(MessagePump):
    """Mixed into whatever runs workers: a worker that ends in error is reported here, once,
    in one sanitised line; workers never report their own errors."""

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and self.app.is_running:
            title = f"{worker.name} failed" if worker.name else ""
            text = failure_text(worker.error)
            self.app.notify(text, title=title, severity="error", markup=False)
