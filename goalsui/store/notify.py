"""Cross-process change notification on PostgreSQL: ``NOTIFY goalsui_changes, '<what>@<origin>'``
after a commit (the origin ignores its own echo); a :class:`ChangeListener` thread LISTENs.

The callback runs in the listener's thread: hand over to your loop. After a lost connection
it gets ``RECONNECTED``: changes may have been missed, so re-read everything."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from goalsui.store import doorbell

CHANNEL = "goalsui_changes"
RECONNECTED = "reconnected"
MAX_PAYLOAD = 7900  # PostgreSQL refuses payloads of 8000 bytes or more
_SEP = "@"
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")

log = logging.getLogger(__name__)


def encode(what: str, origin: str = "") -> str:
    what = what.replace(_SEP, "_")
    payload = f"{what}{_SEP}{origin}" if origin else what
    return payload.encode()[:MAX_PAYLOAD].decode(errors="ignore")


def decode(payload: str) -> tuple[str, str]:
    """``'intents@123-ab'`` -> ``('intents', '123-ab')``; no origin -> ``''``."""
    what, _, origin = payload.partition(_SEP)
    return what, origin


def publish_now(engine: Engine, what: str, origin: str = "") -> bool:
    """NOTIFY in a transaction of its own; whether one was sent. Never raises: the change is
    committed already. SQLite: the wake folder's bells ring instead (:mod:`~goalsui.store.doorbell`)."""
    if engine.dialect.name != "postgresql":
        folder = doorbell.wake_dir(engine)
        if folder is not None:
            doorbell.ring(folder, origin)
        return False
    try:
        with engine.connect() as conn:
            conn.execute(_NOTIFY, {"channel": CHANNEL, "payload": encode(what, origin)})
            conn.commit()
        return True
    except Exception as exc:  # noqa: BLE001 - a lost notification only delays readers
        log.warning("could not publish a change notification: %s", exc)
        return False


@dataclass(eq=False)
class ChangeListener:
    """A thread that LISTENs on :data:`CHANNEL` and calls ``callback(what)``, reconnecting
    with a back-off; ``ignore_origin``'s own changes (announced in-process) are dropped."""

    url: InitVar[str]
    callback: Callable[[str], None]
    ignore_origin: str | None = field(default=None, kw_only=True)
    max_backoff: float = field(default=10.0, kw_only=True)
    # the psycopg connection string of the SQLAlchemy URL
    dsn: str = field(init=False, repr=False)
    last_error: str | None = field(default=None, init=False)
    _stop_token: str = field(default_factory=lambda: f"__stop__{uuid.uuid4().hex}", init=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False)
    _ready: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def __post_init__(self, url: str) -> None:
        self.dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    @property
    def listening(self) -> bool:
        return self._ready.is_set() and not self._stopping.is_set()

    def start(self, wait: float = 10.0) -> bool:
        """Start the thread; True once LISTEN is active within ``wait`` s, else it keeps
        trying (``last_error`` says why). Notifications before LISTEN are not seen."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="goalsui-change-listener", daemon=True
            )
            self._thread.start()
        return self._ready.wait(wait)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening and wait for the thread (wakes it with a private NOTIFY)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        if self._ready.is_set():
            with contextlib.suppress(Exception):  # the thread also wakes on its own timeout
                import psycopg

                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=3) as conn:
                    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self._stop_token))
        thread.join(timeout)

    def _run(self) -> None:
        import psycopg
        from psycopg import sql

        backoff = 0.5
        connected_before = False
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                    self.last_error = None
                    self._ready.set()
                    backoff = 0.5
                    if connected_before:
                        self._deliver(RECONNECTED)
                    connected_before = True
                    self._pump(conn)
            except Exception as exc:  # noqa: BLE001 - reconnect, whatever went wrong
                if self._stopping.is_set():
                    break
                self.last_error = " ".join(str(exc).split()) or type(exc).__name__
                log.warning("change listener: %s (retrying in %.1f s)", self.last_error, backoff)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)

    def _pump(self, conn: Any) -> None:
        while not self._stopping.is_set():
            # The timeout only bounds how long a stop can go unnoticed if its NOTIFY is lost.
            for note in conn.notifies(timeout=2.0):
                if note.payload == self._stop_token or self._stopping.is_set():
                    return
                what, origin = decode(note.payload)
                if self.ignore_origin and origin == self.ignore_origin:
                    continue
                self._deliver(what)

    def _deliver(self, what: str) -> None:
        try:
            self.callback(what)
        except Exception:  # a faulty callback must not kill the listener
            log.exception("change listener callback failed")


def new_origin() -> str:
    """A name for one publishing service: ``<pid>-<random>``."""
    import os

    return f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
