"""Change notification: in-process callbacks and, on PostgreSQL, LISTEN/NOTIFY."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from sqlalchemy.engine import Engine

from goalsui.domain.states import ChangeTopic
from goalsui.store import notify as change_notify

Callback = Callable[[str], None]


class ChangeHub:
    """The listeners of one service and its cross-process change listeners."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.origin = change_notify.new_origin()  # names this service in NOTIFY payloads
        self.listeners: list[Callback] = []
        self.remote: list[change_notify.ChangeListener] = []

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        """Call ``callback(topic)`` after every change made through this service."""
        self.listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self.listeners:
                self.listeners.remove(callback)

        return unsubscribe

    def publish(self, topic: ChangeTopic | str) -> None:
        """Tell other processes (NOTIFY on PostgreSQL), then this process's listeners."""
        what = str(topic)
        change_notify.publish_now(self.engine, what, self.origin)
        for callback in list(self.listeners):
            with contextlib.suppress(Exception):  # a listener never breaks the caller
                callback(what)

    @property
    def across_processes(self) -> bool:
        """True on PostgreSQL: :meth:`listen` hears other processes' changes."""
        return self.engine.dialect.name == "postgresql"

    def listen(
        self, callback: Callback, *, include_own: bool = False, wait: float = 10.0
    ) -> Callable[[], None]:
        """Call ``callback(topic)`` when any process changes the database; returns stop().

        PostgreSQL: a LISTEN thread (``callback`` runs in it); ``"reconnected"`` after a
        lost connection (re-read everything); own changes only with ``include_own``.
        Returns once LISTEN is active or after ``wait`` s. SQLite: a no-op, keep polling."""
        if not self.across_processes:
            return lambda: None
        listener = change_notify.ChangeListener(
            self.url, callback, ignore_origin=None if include_own else self.origin
        )
        self.remote.append(listener)
        listener.start(wait=wait)

        def stop() -> None:
            listener.stop()
            if listener in self.remote:
                self.remote.remove(listener)

        return stop

    def close(self) -> None:
        """Stop every cross-process listener."""
        for listener in list(self.remote):
            listener.stop()
        self.remote.clear()
