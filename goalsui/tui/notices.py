"""Console notices: every ``notify`` goes to the notice line (a secondary screen's title
line) and the event log (``L``). There are no toasts: a toast covers a pane, whatever
its place, and the notice line already shows the newest message at every size.

The notice, the message that carries it (``NoticeAdded``: to the app from any thread,
then to the screens) and the app's mixin live here, beside the one report of a failed
worker (:class:`WorkerFailures`).
"""

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


class NoticeAdded(Message, bubble=False):
    """A notification: the app records it, the screens' notice lines show the newest."""

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
    """Mixed into the app, the screens and the widgets that run workers: a worker that
    ends in error is reported here, once (notice line and event log, one sanitised line,
    no traceback). Workers return or apply their result; they never report their errors.
    """

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and self.app.is_running:
            title = f"{worker.name} failed" if worker.name else ""
            text = failure_text(worker.error)
            self.app.notify(text, title=title, severity="error", markup=False)
