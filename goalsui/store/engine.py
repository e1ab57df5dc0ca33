"""Engines for SQLite (WAL, busy timeout, BEGIN IMMEDIATE) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

from goalsui.errors import ValidationError

SQLITE_BUSY_MS = 10_000


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` as psycopg 3 URLs; validate the rest."""
    url = url.strip()
    if url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url[len("postgres://") :]
    elif url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
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


def make_engine(url: str, *, reader: bool = False) -> Engine:
    """Build the engine for ``url`` with the settings goalsui relies on.

    On SQLite a writer engine starts every transaction with ``BEGIN IMMEDIATE``; a
    ``reader`` engine uses deferred transactions so reads never queue behind writes.
    """
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False},
        )
        _configure_sqlite(engine, immediate=not reader)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _configure_sqlite(engine: Engine, *, immediate: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        # Driver autocommit off, so that we emit BEGIN IMMEDIATE ourselves (pysqlite recipe).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):  # type: ignore[no-untyped-def]
        # Take the write lock at BEGIN: a deferred read-then-write would fail at once
        # with "database is locked" under contention instead of waiting.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
