"""Engines for SQLite (WAL, busy timeout, BEGIN IMMEDIATE) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

from goalsui.errors import DatabaseReplaced, NoDatabase, ValidationError

SQLITE_BUSY_MS = 10_000
#: Beside a SQLite database file: says a database was created there, so that a missing
#: file is an error (deleted under goalsui), not a reason to create an empty one.
MARKER_SUFFIX = ".created"


class SqliteFile:
    """The identity ``(st_dev, st_ino)`` of the SQLite file an engine first opened, and a
    marker beside it. Every transaction checks the identity, so a file deleted or replaced
    under a running goalsui raises :class:`~goalsui.errors.DatabaseReplaced` instead of
    writing where nobody looks; a missing file with a marker is
    :class:`~goalsui.errors.NoDatabase` unless ``may_create`` (``goalsui db upgrade``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.marker = path.with_name(path.name + MARKER_SUFFIX)
        self.identity: tuple[int, int] | None = None
        self.may_create = False  # True: create the file again where one was before

    def replaced(self) -> DatabaseReplaced:
        return DatabaseReplaced(
            f"the database file {self.path} was deleted or replaced while goalsui was running"
        )

    def before_connect(self) -> None:
        """Refuse to create an empty database where one existed (see the class)."""
        if self.path.exists():
            return
        if self.identity is not None:
            raise self.replaced()
        if self.marker.exists() and not self.may_create:
            raise NoDatabase(f"no database at {self.path}; run 'goalsui db upgrade' to create it")

    def opened(self) -> None:
        """Keep the file's identity (first connection) and leave the marker beside it."""
        if self.identity is not None:
            return
        st = os.stat(self.path)
        self.identity = (st.st_dev, st.st_ino)
        if not self.marker.exists():
            with contextlib.suppress(OSError):  # a read-only folder: the inode check holds
                self.marker.write_text(
                    "goalsui created a database here. If the database file is missing, goalsui "
                    "refuses to start; 'goalsui db upgrade' creates a new, empty one.\n"
                )

    def check(self) -> None:
        """Raise :class:`DatabaseReplaced` if the file is not the one first opened."""
        if self.identity is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise self.replaced() from None
        if (st.st_dev, st.st_ino) != self.identity:
            raise self.replaced()


def sqlite_file(engine: Engine) -> SqliteFile | None:
    """The file guard of a SQLite engine on a file (None for others)."""
    guard: SqliteFile | None = getattr(engine, "_goalsui_file", None)
    return guard


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as psycopg 3 URLs; validate the rest."""
    url = url.strip()
    for bare in ("postgres://", "postgresql://"):
        if url.startswith(bare):
            url = "postgresql+psycopg://" + url.removeprefix(bare)
    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a user error
        raise ValidationError(f"invalid database URL: {exc}") from None
    if parsed.get_backend_name() not in {"sqlite", "postgresql"}:
        raise ValidationError(
            f"unsupported database '{parsed.get_backend_name()}': use sqlite:///PATH "
            "or postgresql+psycopg://USER@HOST/DB"
        )
    return url


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def make_engine(url: str, *, reader: bool = False, file: SqliteFile | None = None) -> Engine:
    """The engine for ``url``. SQLite: a writer begins ``IMMEDIATE``, a ``reader`` deferred
    (reads never queue behind writes), sharing the writer's ``file`` guard."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            url, connect_args={"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False}
        )
        guard = None
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            guard = file or SqliteFile(Path(parsed.database).resolve())
            engine._goalsui_file = guard  # type: ignore[attr-defined]  # lives as long as the engine
        _configure_sqlite(engine, immediate=not reader, guard=guard)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _configure_sqlite(engine: Engine, *, immediate: bool, guard: SqliteFile | None) -> None:
    @event.listens_for(engine, "do_connect")
    def _before_connect(*_args: Any) -> None:
        if guard is not None:
            guard.before_connect()

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Driver autocommit off, so that we emit BEGIN IMMEDIATE ourselves (pysqlite recipe).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()
        if guard is not None:
            guard.opened()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if guard is not None:
            guard.check()  # on the file we opened, or not at all (one stat: ~1 us)
        # Take the write lock at BEGIN: a deferred read-then-write would fail at once
        # with "database is locked" under contention instead of waiting.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
