"""The store: engines, sessions and schema, the same code on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Table, event, func, inspect, select, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from goalsui.domain.text import strip_nul, strip_nul_deep
from goalsui.store import models  # noqa: F401 - registers the tables
from goalsui.store.engine import make_engine, normalize_url, sqlite_file


@event.listens_for(Session, "before_flush")
def _strip_nul(session: Session, _context: Any, _instances: Any) -> None:
    """PostgreSQL rejects NUL in text: every record written through a session loses it
    (text columns and the strings inside JSON values), on every engine alike."""
    for obj in (*session.new, *session.dirty):
        for attr in inspect(obj).mapper.column_attrs:
            value = obj.__dict__.get(attr.key)
            if isinstance(value, str):
                if "\x00" in value:
                    setattr(obj, attr.key, strip_nul(value))
            elif isinstance(value, dict | list):
                cleaned = strip_nul_deep(value)
                if cleaned is not value:
                    setattr(obj, attr.key, cleaned)


class Store:
    """Owns the database engines; hands out short transactions."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.engine: Engine = make_engine(self.url)
        self.read_engine: Engine = (
            # the same file guard: either engine notices the file it opened is gone
            make_engine(self.url, reader=True, file=sqlite_file(self.engine))
            if self.dialect == "sqlite"
            else self.engine
        )

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def ensure_schema(self) -> None:
        """Create the schema on first use (migrations upgrade existing databases)."""
        from goalsui.store.revision import is_current

        if is_current(self.engine):
            return  # one SELECT; Alembic is not even imported
        from goalsui.store.schema import ensure_schema

        ensure_schema(self.engine)

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction, committed on success and rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    def serialize(self, session: Session, name: str) -> None:
        """Queue this write transaction behind every other one serialised under ``name``:
        a transaction advisory lock on PostgreSQL (SQLite's write lock already does it)."""
        if self.dialect == "postgresql":
            key = int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "big", signed=True)
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction."""
        with Session(self.read_engine, expire_on_commit=False) as session, session.begin():
            yield session

    def count_rows(self, table: Table, **equals: Any) -> int:
        """How many rows of ``table`` have these column values."""
        q = select(func.count()).select_from(table)
        for name, value in equals.items():
            q = q.where(table.c[name] == value)
        with self.engine.connect() as conn:
            return int(conn.execute(q).scalar() or 0)

    def dispose(self) -> None:
        self.engine.dispose()
        if self.read_engine is not self.engine:
            self.read_engine.dispose()
