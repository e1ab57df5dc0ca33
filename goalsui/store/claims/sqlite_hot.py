"""The claim path's statements on SQLite, straight through the DBAPI cursor.

Every SQL text here is a Core statement of :mod:`goalsui.store.claims.statements` (the
ones the generic path runs), compiled for SQLite once, on first use, and sent with
``sqlite3`` and positional ``?`` parameters on the connection of the caller's transaction
(so ``BEGIN IMMEDIATE``, commit and rollback stay SQLAlchemy's). Per row, SQLAlchemy's
parameter and result processing costs several times what SQLite itself does; at
thousands of fires a second that is most of a core.

Each batch is ONE statement per :data:`CHUNK` rows, never ``executemany`` or a
row-by-row fetch: ``sqlite3`` releases the GIL around every ``sqlite3_step``, and with
the event loop busy in another thread each re-acquisition can wait a switch interval
(5 ms): 1,000 rows stepped one by one took 0.5 s instead of 1 ms (measured here). So
the compiled text of the statement for ONE row is widened textually:

- an ``UPDATE`` by id (``<table>.id = ?``) becomes ``UPDATE ... FROM (VALUES (...), ...)
  AS v WHERE ...``, each per-row parameter read as ``v.columnN``; rows that share all
  their values use the statement's group form instead, ``<table>.id IN
  (__[POSTCOMPILE__ids])`` with the token replaced by ``?`` marks (SQLite runs
  ``UPDATE ... FROM`` through a materialized join, about four times the cost per row);
- an ``INSERT`` repeats its ``VALUES`` group;
- a ``SELECT`` is read as ONE row, ``SELECT json_group_array(json_array(<columns>)) FROM
  (<select>)``, parsed by one ``json.loads``.

(SQLAlchemy's own ``values()`` construct renders ``(VALUES ...) AS v (column1, ...)``,
which SQLite refuses, and its text would differ with every row count anyway.)

Values are bound and read exactly as the ORM types store them: timestamps as UTC text
``YYYY-MM-DD HH:MM:SS.ffffff`` (:func:`~goalsui.store.claims.binds.stamp`), JSON as its
text, booleans as 0/1; which conversion a value gets is read from its bind parameter's type.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache, lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, bindparam, func, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from goalsui.store import frame_sql
from goalsui.store.claims import statements as st
from goalsui.store.claims.binds import INTENT, RUN, Stamp, stamp
from goalsui.store.claims.shapes import Cas, Row
from goalsui.store.models import UTCDateTime

#: Rows per statement (at most ~13,000 bound variables; SQLite allows 32,766).
CHUNK = 500

_DIALECT = sqlite.dialect()
#: :func:`stamp` with a memory (a batch repeats the same few instants)
_stamp = lru_cache(maxsize=1024, typed=True)(stamp)


def cursor(conn: Connection) -> sqlite3.Cursor:
    """A DBAPI cursor on the connection of ``conn``'s open transaction."""
    raw = conn.connection.dbapi_connection
    if not isinstance(raw, sqlite3.Connection):  # pragma: no cover - always sqlite3 here
        raise TypeError("the SQLite fast path needs a sqlite3 connection")
    return raw.cursor()


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _converter(kind: Any) -> Callable[[Any], Any] | None:
    """How a value of this type is bound (None: as it is; a converter passes None on)."""
    if isinstance(kind, Stamp | UTCDateTime):
        return _stamp
    return _json if isinstance(kind, JSON) else None


class Compiled:
    """A Core statement compiled for SQLite: its text (whitespace folded), the bind
    parameter of each ``?`` in order, and the statement's own values (its constants)."""

    def __init__(self, statement: Any) -> None:
        c = statement.compile(dialect=_DIALECT)
        self.sql = " ".join(c.string.split())
        self.names: tuple[str, ...] = tuple(c.positiontup or ())
        self.fixed: dict[str, Any] = dict(c.params)
        self.expanding = {k for k, b in c.binds.items() if b.expanding}
        self.convert = {k: f for k, b in c.binds.items() if (f := _converter(b.type))}

    def ready(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` (by parameter name) converted to their bound form."""
        get = self.convert.get
        return {k: v if (f := get(k)) is None else f(v) for k, v in values.items()}

    def bind(self, values: dict[str, Any]) -> tuple[str, list[Any]]:
        """The text and positional parameters for ``values`` (bound forms, by name; a
        sequence for an expanding ``IN``), the statement's constants for the rest."""
        sql, params = self.sql, []
        for name in self.names:
            value = values[name] if name in values else self.fixed[name]
            if name in self.expanding:
                sql = sql.replace(f"(__[POSTCOMPILE_{name}])", f"({_marks(len(value))})")
                params.extend(value)
            else:
                params.append(value)
        return sql, params


def _converted(
    rows: Iterable[Sequence[Any]], convert: Sequence[tuple[int, Callable[[Any], Any]]]
) -> list[tuple[Any, ...]]:
    """Rows of values with ``convert``'s positions in their bound form (column by column:
    the loops run in C; a column of NULLs is left as it is)."""
    columns: list[Any] = list(zip(*rows, strict=True))
    if not columns:
        return []
    for i, f in convert:
        if columns[i].count(None) != len(columns[i]):
            columns[i] = map(f, columns[i])
    return list(zip(*columns, strict=True))


class Update:
    """A Core ``UPDATE`` by one id and its group form, sent for many rows at once.

    ``keys``: the per-row parameters of ``one``, in the order of the rows' values (the id,
    ``_id``, first); ``group`` has ``_ids`` in place of ``_id``.
    """

    def __init__(self, one: Any, group: Any, keys: tuple[str, ...]) -> None:
        self.one, self.group, self.keys = Compiled(one), Compiled(group), keys
        self.convert = [(i, f) for i, k in enumerate(keys) if (f := self.one.convert.get(k))]
        column = {k: f"v.column{i}" for i, k in enumerate(keys, start=1)}
        pieces = self.one.sql.split("?")
        sql, rest = pieces[0], []
        for name, piece in zip(self.one.names, pieces[1:], strict=True):
            sql += column.get(name, "?") + piece
            if name not in column:
                rest.append(name)
        head, where = sql.split(" WHERE ", 1)
        self.head, self.where = f"{head} FROM (VALUES ", f") AS v WHERE {where}"
        self.width = len(keys)
        #: the other parameters, before and after the values
        self.before, self.after = rest[: head.count("?")], rest[head.count("?") :]

    def run(self, cur: sqlite3.Cursor, rows: Iterable[Sequence[Any]], **call: Any) -> int:
        """Update each row (``call``: the parameters every row shares); returns the rows hit."""
        groups: dict[tuple[Any, ...], list[Any]] = {}
        for row in _converted(rows, self.convert):
            groups.setdefault(row[1:], []).append(row[0])
        call = self.one.ready(call)
        single: list[tuple[Any, ...]] = []
        hit = 0
        for values, ids in groups.items():
            if len(ids) < st.GROUP_MIN:
                single.extend((i, *values) for i in ids)
                continue
            shared = dict(zip(self.keys[1:], values, strict=True)) | call
            for chunk in _chunks(ids):
                shared["_ids"] = chunk
                cur.execute(*self.group.bind(shared))
                hit += cur.rowcount
        fixed = self.one.fixed | call
        before, after = [fixed[k] for k in self.before], [fixed[k] for k in self.after]
        one = f"({_marks(self.width)})"
        for chunk in _chunks(single):
            cur.execute(
                self.head + ",".join([one] * len(chunk)) + self.where,
                [*before, *chain.from_iterable(chunk), *after],
            )
            hit += cur.rowcount
        return hit


class Insert:
    """A Core one-row ``INSERT`` sent for many rows (dicts): its ``VALUES`` group repeated."""

    def __init__(self, statement: Any) -> None:
        c = Compiled(statement)  # every parameter a column of the rows
        self.head, self.one = c.sql.split(" VALUES ", 1)
        self.pick = itemgetter(*c.names)
        self.convert = [(i, f) for i, k in enumerate(c.names) if (f := c.convert.get(k))]

    def run(self, cur: sqlite3.Cursor, rows: Sequence[Row]) -> None:
        for chunk in _chunks(_converted(map(self.pick, rows), self.convert)):
            cur.execute(
                f"{self.head} VALUES {','.join([self.one] * len(chunk))}",
                list(chain.from_iterable(chunk)),
            )


class Reader:
    """A Core ``SELECT`` of some columns of a table, read as ONE row (a JSON array of the
    rows' values); rows come back as dicts of Python values."""

    def __init__(self, query: Any) -> None:
        sub = query.subquery()
        cols = list(sub.c)
        self.names = tuple(c.name for c in cols)
        #: positions of the timestamps (parsed before the dict is built)
        self.stamps = tuple(i for i, c in enumerate(cols) if isinstance(c.type, UTCDateTime))
        #: JSON columns go in as JSON (``json(col)``), parsed with the rest in one ``loads``
        packed = [func.json(c) if isinstance(c.type, JSON) else c for c in cols]
        one = func.json_array(*packed) if len(cols) > 1 else packed[0]
        self.sql = Compiled(select(func.json_group_array(one)).select_from(sub))

    def values(self, cur: sqlite3.Cursor, **values: Any) -> list[Any]:
        """Each row's values as a list (one column: the value itself), as SQLite has them."""
        cur.execute(*self.sql.bind(self.sql.ready(values)))
        found: list[Any] = json.loads(cur.fetchone()[0])
        return found

    def rows(self, cur: sqlite3.Cursor, raw: str | None = None, **values: Any) -> list[Row]:
        """The rows (in no particular order) for the parameters ``values``.

        ``raw``: also keep that column's stored value, as ``row["_raw"]``.
        """
        names, stamps = self.names, self.stamps
        raw_at = names.index(raw) if raw is not None else -1
        parse = datetime.fromisoformat
        out = []
        for row in self.values(cur, **values):
            kept = row[raw_at] if raw_at >= 0 else None
            for i in stamps:
                value = row[i]
                if value is not None:
                    row[i] = parse(value + "+00:00")
            record = dict(zip(names, row, strict=True))
            if raw_at >= 0:
                record["_raw"] = kept
            out.append(record)
        return out


@cache
def _reader(names: tuple[str, ...] | None) -> Reader:
    """The due intents (``names`` None) or some columns of intents by id."""
    if names is None:
        return Reader(st.due(list(INTENT.c)))
    return Reader(st.by_ids([INTENT.c[n] for n in names]))


def select_due(cur: sqlite3.Cursor, due_by: datetime, limit: int) -> tuple[list[Row], list[str]]:
    """Active rows due by ``due_by`` (soonest first, at most ``limit``), and their due texts."""
    rows = _reader(None).rows(cur, "next_run_at", _dueby=due_by, _limit=limit)
    rows.sort(key=lambda r: (r["next_run_at"], r["id"]))
    return rows, [r.pop("_raw") for r in rows]


def intents_by_id(
    cur: sqlite3.Cursor, ids: Sequence[int], names: Sequence[str], *, lock: bool = False
) -> list[Row]:
    """Some columns of the intents with these ids (``lock``: the write lock of ``BEGIN
    IMMEDIATE`` holds them already)."""
    reader = _reader(tuple(names))
    return [row for chunk in _chunks(ids) for row in reader.rows(cur, _ids=chunk)]


def open_runs(cur: sqlite3.Cursor, run_ids: Sequence[int]) -> set[int]:
    """Which of these runs are still ``running``."""
    reader = _statement(Reader, st.OPEN_RUNS)
    return {i for chunk in _chunks(run_ids) for i in reader.values(cur, _ids=chunk)}


def soonest(cur: sqlite3.Cursor) -> datetime | None:
    """``min(next_run_at)`` of the active intents (one probe of the due index)."""
    cur.execute(frame_sql.SOONEST)
    value = cur.fetchone()[0]
    return None if value is None else datetime.fromisoformat(value + "+00:00")


@cache
def _statement(kind: Callable[..., Any], *statements: Any) -> Any:
    """``kind(*statements)``, built once."""
    return kind(*statements)


def cas(cur: sqlite3.Cursor, rows: Iterable[Cas], now: datetime, due_by: datetime) -> int:
    """The claim's compare-and-set (:data:`~goalsui.store.claims.statements.CAS`) of each
    row; returns the rows hit."""
    update: Update = _statement(Update, st.CAS, st.CAS_GROUP, st.CAS_KEYS)
    return update.run(cur, rows, _now=now, _dueby=due_by)


#: A run inserted with its id (the caller holds the write lock: ids are max + 1, ...).
_RUN_INSERT = st.RUN_INSERT.values(id=bindparam("id"))
_MAX_RUN_ID = select(func.max(RUN.c.id))


def insert_runs(cur: sqlite3.Cursor, rows: list[Row]) -> list[Row]:
    """Insert run rows with ids max + 1, ... (the caller holds the write lock); returns
    them (the same dicts, their ``id`` set)."""
    cur.execute(_statement(Compiled, _MAX_RUN_ID).sql)
    top = cur.fetchone()[0] or 0
    for k, row in enumerate(rows, start=top + 1):
        row["id"] = k
    _statement(Insert, _RUN_INSERT).run(cur, rows)
    return rows


def insert_journal(cur: sqlite3.Cursor, rows: Sequence[Row]) -> None:
    _statement(Insert, st.JOURNAL_INSERT).run(cur, rows)


def close_runs(cur: sqlite3.Cursor, updates: Sequence[Sequence[Any]]) -> None:
    """Record outcomes on runs: ``(run_id, *values of RUN_DONE_COLUMNS)`` each (timestamps
    as datetimes, JSON columns as Python values)."""
    _statement(Update, st.RUN_DONE, st.RUN_DONE_GROUP, st.RUN_DONE_KEYS).run(cur, updates)


def update_after(cur: sqlite3.Cursor, updates: Sequence[tuple[int, Row]], owner: str) -> None:
    """Apply completion values ``(intent_id, {column: value})`` (every one of
    AFTER_COLUMNS) to intents still ``firing`` under ``owner``'s lease."""
    pick = itemgetter(*st.AFTER_COLUMNS)
    rows = [(i, *pick(values)) for i, values in updates]
    _statement(Update, st.AFTER, st.AFTER_GROUP, st.AFTER_KEYS).run(cur, rows, _owner=owner)


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    """``items`` in slices of at most :data:`CHUNK`."""
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]
