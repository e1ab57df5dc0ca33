"""The scheduler's hot statements on PostgreSQL, straight through the psycopg cursor.

The same work the generic Core statements of :mod:`goalsui.store.claims.primitives`
do, as fixed SQL text with one array parameter per column: a batch of any size is ONE
statement (``UPDATE ... FROM unnest(...)``, ``INSERT ... SELECT ... FROM unnest(...)``,
``WHERE id = ANY(...)``), run on the connection of the caller's transaction (so begin,
commit and rollback stay SQLAlchemy's).

Why: a claim of 500 rows through Core sent a multi-row ``VALUES`` (insertmanyvalues) or
an expanded ``IN`` list whose text differs with every batch size, so psycopg parsed each
statement anew (about 40 % of the database thread's time at 5,000 fires, measured here),
and SQLAlchemy processed every bound and fetched value in Python. Fixed text is parsed
once per process and prepared by the server after a few executions; the arrays are
sent in binary (``%b``: psycopg's text form of an array escapes every element with a
regular expression, five times the cost here).

Values go in as the ORM types store them (timestamps aware UTC, JSON as its text cast
with ``::json``) and come out as the Core path gives them (timestamps aware UTC,
``datetime.UTC``; JSON parsed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

import psycopg
from sqlalchemy import JSON, Boolean, Float, Integer
from sqlalchemy.engine import Connection

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store.claims.binds import INTENT, JOURNAL, RUN
from goalsui.store.claims.shapes import Cas, Row
from goalsui.store.claims.statements import AFTER_COLUMNS, RUN_DONE_COLUMNS
from goalsui.store.models import UTCDateTime


def cursor(conn: Connection) -> psycopg.Cursor[Any]:
    """A psycopg cursor on the connection of ``conn``'s open transaction."""
    raw = conn.connection.dbapi_connection
    if not isinstance(raw, psycopg.Connection):  # pragma: no cover - always psycopg 3 here
        raise TypeError("the PostgreSQL fast path needs a psycopg 3 connection")
    return raw.cursor()


def quote(name: str) -> str:
    return f'"{name}"'


def _sql_type(column: Any) -> str:
    """The type a column's values are sent as (JSON as text, cast with ``::json``)."""
    kind = column.type
    if isinstance(kind, UTCDateTime):
        return "timestamptz"
    if isinstance(kind, Boolean):
        return "bool"
    if isinstance(kind, Integer):
        return "int8"  # assignment casts to the column's width
    if isinstance(kind, Float):
        return "float8"
    return "text"  # strings, and JSON as its text


NULL, ONE, EACH = "n", "c", "a"  # how a column of a batch travels (see _Batch)


class _Batch:
    """Some columns of a table as a batch statement sends them: a column that is NULL
    in every row is written ``NULL``, one with the same value in every row is ONE
    parameter, the others an array each (``unnest``). Fewer and shorter arrays: psycopg
    dumps each element of an array in Python.

    ``bind`` gives the shape (a kind per column, the key of the cached SQL text) and the
    named parameters; ``expr`` writes a column's value for the shape.
    """

    def __init__(self, table: Any, names: Sequence[str]) -> None:
        cols = [table.c[n] for n in names]
        self.table = table.name
        self.names = tuple(names)
        self.types = tuple(_sql_type(c) for c in cols)
        self.json = tuple(i for i, c in enumerate(cols) if isinstance(c.type, JSON))
        #: float columns: an int among floats would make psycopg dump the array as ints
        self.floats = tuple(i for i, c in enumerate(cols) if isinstance(c.type, Float))

    def bind(self, columns: list[list[Any]]) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The shape and parameters of a batch given column by column (equal lengths)."""
        for i in self.json:
            columns[i] = [None if v is None else json.dumps(v) for v in columns[i]]
        for i in self.floats:
            columns[i] = [None if v is None else float(v) for v in columns[i]]
        kinds: list[str] = []
        params: dict[str, Any] = {}
        for i, values in enumerate(columns):
            first, n = values[0], len(values)
            if values.count(first) == n:
                kinds.append(NULL if first is None else ONE)
                if first is not None:
                    params[f"c{i}"] = first
            else:
                kinds.append(EACH)
                params[f"a{i}"] = values
        return tuple(kinds), params

    def expr(self, i: int, kind: str) -> str:
        """Column ``i``'s value in a statement of this shape."""
        cast = "::json" if i in self.json else ""
        if kind == NULL:
            return "NULL"
        if kind == ONE:
            return f"%(c{i})s::{self.types[i]}{cast}"
        return f"v.{quote(self.names[i])}{cast}"

    def arrays(self, kinds: Sequence[str]) -> tuple[str, str]:
        """The ``unnest`` arguments and aliases of the columns sent as arrays (each
        starting with ", ")."""
        each = [i for i, k in enumerate(kinds) if k == EACH]
        args = "".join(f", %(a{i})b::{self.types[i]}[]" for i in each)
        alias = "".join(f", {quote(self.names[i])}" for i in each)
        return args, alias


def _utc(rows: list[Row], stamps: Sequence[str]) -> list[Row]:
    """Timestamps as the Core path returns them: aware, in ``datetime.UTC``."""
    for row in rows:
        for key in stamps:
            value = row[key]
            if value is not None and value.tzinfo is not UTC:
                row[key] = value.astimezone(UTC)
    return rows


class _Reader:
    """``SELECT <some columns> FROM intent`` with a fixed tail."""

    def __init__(self, names: Sequence[str] | None, tail: str) -> None:
        cols = [INTENT.c[n] for n in names] if names else list(INTENT.c)
        self.names = tuple(c.name for c in cols)
        self.stamps = tuple(c.name for c in cols if isinstance(c.type, UTCDateTime))
        self.sql = f"SELECT {', '.join(quote(n) for n in self.names)} FROM intent {tail}"

    def rows(self, cur: psycopg.Cursor[Any], params: Sequence[Any]) -> list[Row]:
        cur.execute(self.sql, params)
        names = self.names
        return _utc([dict(zip(names, r, strict=True)) for r in cur.fetchall()], self.stamps)


_DUE = _Reader(
    None,
    "WHERE status = %s AND next_run_at <= %s ORDER BY next_run_at, id LIMIT %s "
    "FOR UPDATE SKIP LOCKED",
)


def select_due(
    cur: psycopg.Cursor[Any], due_by: datetime, limit: int
) -> tuple[list[Row], list[Any]]:
    """Active rows due by ``due_by`` (soonest first, at most ``limit``), row-locked,
    passing over rows another transaction holds; and their due times."""
    rows = _DUE.rows(cur, (IntentStatus.ACTIVE, due_by, limit))
    return rows, [r["next_run_at"] for r in rows]


@cache
def _by_id(names: tuple[str, ...], lock: bool) -> _Reader:
    tail = "WHERE id = ANY(%b::int8[])" + (" ORDER BY id FOR UPDATE" if lock else "")
    return _Reader(names, tail)


def intents_by_id(
    cur: psycopg.Cursor[Any], ids: Sequence[int], names: Sequence[str], *, lock: bool
) -> list[Row]:
    """Some columns of the intents with these ids (row-locked with ``lock``)."""
    return _by_id(tuple(names), lock).rows(cur, (list(ids),))


def open_runs(cur: psycopg.Cursor[Any], run_ids: Sequence[int]) -> set[int]:
    """Which of these runs are still ``running`` (row-locked)."""
    cur.execute(
        "SELECT id FROM intent_run WHERE id = ANY(%b::int8[]) AND status = %s "
        "ORDER BY id FOR UPDATE",
        (list(run_ids), RunStatus.RUNNING),
    )
    return {r[0] for r in cur.fetchall()}


def soonest(cur: psycopg.Cursor[Any]) -> datetime | None:
    """``min(next_run_at)`` of the active intents (one probe of the due index)."""
    cur.execute("SELECT min(next_run_at) FROM intent WHERE status = %s", (IntentStatus.ACTIVE,))
    value = cur.fetchone()[0]  # type: ignore[index]  # an aggregate always returns a row
    return None if value is None else value.astimezone(UTC)


#: The compare-and-set's columns (attempts and fires are increments).
_CAS = _Batch(
    INTENT,
    ("status", "lease_owner", "lease_until", "attempts", "fires", "next_run_at", "last_fired_at"),
)
_INCREMENTS = (3, 4)


#: SQL texts are cached by shape (the shapes a scheduler sends are few)
@lru_cache(maxsize=512)
def _cas_sql(kinds: tuple[str, ...]) -> str:
    """Every condition on ``intent`` is a join condition against the values (the id, the
    due time as selected, the status it must still have), so the plan is always "each
    value row, its intent by primary key" (or a hash join), never a scan of the rows the
    statistics say are few repeated for every value row. ``next_run_at <= :due_by`` is
    checked as ``v._due <= :due_by`` (the same, given ``next_run_at = v._due``)."""
    sets = []
    for i, name in enumerate(_CAS.names):
        value = _CAS.expr(i, kinds[i])
        if i in _INCREMENTS:
            value = f"i.{name} + {value}" if kinds[i] != NULL else f"i.{name}"
        sets.append(f"{name} = {value}")
    args, alias = _CAS.arrays(kinds)
    return (
        f"UPDATE intent AS i SET {', '.join(sets)}, pending_trigger = NULL, "
        "pending_event_id = NULL, updated_at = %(now)s "
        f"FROM unnest(%(ids)b::int8[], %(due)b::timestamptz[], %(was)b::text[]{args}) "
        f"AS v(_id, _due, _was{alias}) "
        "WHERE i.id = v._id AND i.status = v._was AND i.next_run_at = v._due "
        "AND v._due <= %(due_by)s"
    )


def cas(cur: psycopg.Cursor[Any], rows: Sequence[Cas], now: datetime, due_by: datetime) -> int:
    """The claim's compare-and-set of every row in ONE statement; returns the rows hit.

    Per row: ``SET status=?, lease_owner=?, ... WHERE id=? AND status='active' AND
    next_run_at<=? AND next_run_at=<as selected>``.
    """
    if not rows:
        return 0
    ids, due, *values = (list(a) for a in zip(*rows, strict=True))
    kinds, params = _CAS.bind(values)
    params.update(ids=ids, due=due, was=[IntentStatus.ACTIVE] * len(ids), now=now, due_by=due_by)
    cur.execute(_cas_sql(kinds), params)
    return cur.rowcount


@lru_cache(maxsize=512)
def _insert_sql(batch: _Batch, kinds: tuple[str, ...], returning: str) -> str:
    values = ", ".join(batch.expr(i, k) for i, k in enumerate(kinds))
    args, alias = batch.arrays(kinds)
    return (
        f"INSERT INTO {batch.table} ({', '.join(quote(n) for n in batch.names)}) "
        f"SELECT {values} FROM unnest(%(_k)b::int8[]{args}) AS v(_k{alias}) "
        f"ORDER BY v._k{returning}"
    )


def _insert(cur: psycopg.Cursor[Any], batch: _Batch, rows: Sequence[Row], returning: str) -> None:
    columns = [[r[n] for r in rows] for n in batch.names]
    kinds, params = batch.bind(columns)
    params["_k"] = list(range(len(rows)))
    cur.execute(_insert_sql(batch, kinds, returning), params)


_RUNS = _Batch(RUN, [c.name for c in RUN.c if c.name != "id"])


def insert_runs(cur: psycopg.Cursor[Any], rows: list[Row]) -> list[Row]:
    """Insert run rows in ONE statement; returns them (the same dicts, ``id`` set).

    The ids come from the table's sequence in the order of ``ORDER BY`` (the rows'
    order), so the returned ids, sorted, are the rows' ids in order: the rule
    SQLAlchemy's own "insertmanyvalues" relies on for an integer key on PostgreSQL.
    """
    if not rows:
        return []
    _insert(cur, _RUNS, rows, " RETURNING id")
    ids = sorted(r[0] for r in cur.fetchall())
    if len(ids) != len(rows):  # pragma: no cover - an INSERT inserts every row
        raise RuntimeError(f"inserted {len(ids)} runs of {len(rows)}")
    for row, run_id in zip(rows, ids, strict=True):
        row["id"] = run_id
    return rows


_JOURNAL = _Batch(JOURNAL, ["at", "actor", "action", "subject", "detail"])


def insert_journal(cur: psycopg.Cursor[Any], rows: Sequence[Row]) -> None:
    if rows:
        _insert(cur, _JOURNAL, rows, "")


@lru_cache(maxsize=512)
def _update_sql(batch: _Batch, kinds: tuple[str, ...], guard: tuple[str, ...]) -> str:
    """``UPDATE table SET <columns> FROM unnest(ids, <guard>, <arrays>) WHERE t.id = v._id
    AND t.<g> = v._<g> ...``: the guard's expected values travel as arrays too, so that
    every condition is a join condition (see :func:`_cas_sql`)."""
    sets = ", ".join(f"{quote(n)} = {batch.expr(i, kinds[i])}" for i, n in enumerate(batch.names))
    args, alias = batch.arrays(kinds)
    gargs = "".join(f", %(g_{g})b::text[]" for g in guard)
    galias = "".join(f", _{g}" for g in guard)
    where = "".join(f" AND t.{quote(g)} = v._{g}" for g in guard)
    return (
        f"UPDATE {batch.table} AS t SET {sets} "
        f"FROM unnest(%(_ids)b::int8[]{gargs}{args}) AS v(_id{galias}{alias}) "
        f"WHERE t.id = v._id{where}"
    )


def _update(
    cur: psycopg.Cursor[Any],
    batch: _Batch,
    ids: list[int],
    columns: list[list[Any]],
    guard: dict[str, Any],
) -> int:
    kinds, params = batch.bind(columns)
    params["_ids"] = ids
    params.update((f"g_{g}", [value] * len(ids)) for g, value in guard.items())
    cur.execute(_update_sql(batch, kinds, tuple(guard)), params)
    return cur.rowcount


_RUN_DONE = _Batch(RUN, RUN_DONE_COLUMNS)
_AFTER = _Batch(INTENT, AFTER_COLUMNS)


def close_runs(cur: psycopg.Cursor[Any], updates: Sequence[Sequence[Any]]) -> None:
    """Record outcomes on runs in ONE statement: ``(run_id, *values of RUN_DONE_COLUMNS)``
    each."""
    if not updates:
        return
    ids, *values = (list(a) for a in zip(*updates, strict=True))
    _update(cur, _RUN_DONE, ids, values, {})


def update_after(cur: psycopg.Cursor[Any], updates: Sequence[tuple[int, Row]], owner: str) -> None:
    """Apply completion values ``(intent_id, {column: value})`` (AFTER_COLUMNS) to intents
    still ``firing`` under ``owner``'s lease, in ONE statement."""
    if not updates:
        return
    ids = [i for i, _ in updates]
    values = [[row[k] for _, row in updates] for k in AFTER_COLUMNS]
    guard = {"status": IntentStatus.FIRING, "lease_owner": owner}
    _update(cur, _AFTER, ids, values, guard)
