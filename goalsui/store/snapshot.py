"""A read-only look at a SQLite database with the standard library alone, for the
console's first frame: it builds the records the service hands out, converting columns by
their declared type, and answers only at :data:`goalsui.store.revision.HEAD`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from goalsui.store.revision import HEAD

#: seconds a read waits for a writer's lock before it gives up (the full read follows)
BUSY_TIMEOUT_S = 0.5

R = TypeVar("R")


def stamp(moment: datetime) -> str:
    """An instant as SQLAlchemy stores it in SQLite (naive UTC), for comparisons."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def _timestamp(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = datetime.fromisoformat(str(value))
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "DATETIME": _timestamp,
    "JSON": lambda value: None if value is None else json.loads(value),
    "BOOLEAN": lambda value: None if value is None else bool(value),
}


class Snapshot:
    """One read-only connection; :meth:`records` and :meth:`scalar` read through it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def records(
        self, cls: type[R], table: str, sql: str = "", params: Sequence[Any] = ()
    ) -> list[R]:
        """``SELECT <the fields of cls> FROM table <sql>``, each row as a ``cls``."""
        names: tuple[str, ...] = cls.__match_args__  # type: ignore[attr-defined]  # a dataclass
        info = self.conn.execute(f"PRAGMA table_info({table})")  # converters by declared type
        known = {str(n): _CONVERTERS.get(str(kind).upper()) for _, n, kind, *_ in info}
        convert = [known.get(name) for name in names]
        cursor = self.conn.execute(f"SELECT {', '.join(names)} FROM {table} {sql}", tuple(params))
        return [
            cls(*(c(v) if c else v for c, v in zip(convert, raw, strict=True))) for raw in cursor
        ]

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(sql, tuple(params)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        self.conn.close()


def file_stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """A SQLite file's fingerprint from two ``stat`` calls (the file's and its WAL's size and
    mtime): any commit changes it."""
    stamp: list[tuple[int, int] | None] = []
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            st = part.stat()
        except OSError:
            stamp.append(None)
        else:
            stamp.append((st.st_size, st.st_mtime_ns))
    return tuple(stamp)


def open_snapshot(path: Path) -> Snapshot | None:
    """A read-only snapshot in one read transaction; None if missing, not at HEAD, unreadable."""
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            check_same_thread=False,
            isolation_level=None,
        )
    except sqlite3.Error:
        return None
    try:
        versions = [r[0] for r in conn.execute("SELECT version_num FROM alembic_version")]
        if versions != [HEAD]:
            conn.close()
            return None
        conn.execute("BEGIN")  # one consistent view for every read that follows
    except sqlite3.Error:
        conn.close()
        return None
    return Snapshot(conn)
