"""The scheduler's hot statements on SQLite, straight through the DBAPI cursor.

The same SQL the Core statements of :mod:`goalsui.store.claims` send (the claim's
compare-and-set included), as fixed text run with ``sqlite3`` ``execute`` /
``executemany`` on the connection of the caller's transaction (so ``BEGIN IMMEDIATE``,
commit and rollback stay SQLAlchemy's). Per row, SQLAlchemy's parameter and result
processing costs several times what SQLite itself does; at thousands of fires a second
that is most of a core.

Each batch is ONE statement (``UPDATE ... WHERE id IN (...)`` for rows that get the same
values, ``UPDATE ... FROM (VALUES ...)`` for the others, multi-row ``INSERT``, and reads
folded into one JSON row by ``json_group_array``), never ``executemany`` or a
row-by-row fetch: ``sqlite3`` releases the GIL around every ``sqlite3_step``, and with
the event loop busy in another thread each re-acquisition can wait a switch interval
(5 ms): 1,000 rows stepped one by one took 0.5 s instead of 1 ms (measured here).

Values are bound and read exactly as the ORM types store them: timestamps as UTC text
``YYYY-MM-DD HH:MM:SS.ffffff`` (:class:`~goalsui.store.models.UTCDateTime`), JSON as
its text, booleans as 0/1.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import cache, lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

from sqlalchemy import JSON
from sqlalchemy.engine import Connection

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store import frame_sql
from goalsui.store.models import Intent, IntentRun, Journal, UTCDateTime
from goalsui.store.tables import table_of

Row = dict[str, Any]

INTENT: Any = table_of(Intent)
RUN: Any = table_of(IntentRun)
JOURNAL: Any = table_of(Journal)
#: A row of bound values (``v.column1`` is the id).
Values = tuple[Any, ...]

#: Rows per statement (at most ~8,000 bound variables; SQLite allows 32,766).
CHUNK = 500


def cursor(conn: Connection) -> sqlite3.Cursor:
    """A DBAPI cursor on the connection of ``conn``'s open transaction."""
    raw = conn.connection.dbapi_connection
    if not isinstance(raw, sqlite3.Connection):  # pragma: no cover - always sqlite3 here
        raise TypeError("the SQLite fast path needs a sqlite3 connection")
    return raw.cursor()


def stamp(value: Any) -> Any:
    """A value as bound on SQLite: an aware datetime becomes its stored UTC text."""
    if value.__class__ is datetime:
        if value.tzinfo is not UTC:
            value = value.astimezone(UTC)
        return value.isoformat(" ", "microseconds")[:-6]  # drop "+00:00"
    return value


def _parse_stamp(value: str) -> datetime:
    return datetime.fromisoformat(value + "+00:00")


def quote(name: str) -> str:
    return f'"{name}"'


#: :func:`stamp` with a memory (a batch repeats the same few instants)
_stamp = lru_cache(maxsize=1024, typed=True)(stamp)


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _values(rows: int, width: int) -> str:
    one = f"({_marks(width)})"
    return ",".join([one] * rows)


class Reader:
    """``SELECT`` of some columns of a table as ONE row (a JSON array of the rows' values);
    rows come back as dicts of Python values."""

    def __init__(self, table: Any, names: Sequence[str] | None = None) -> None:
        cols = [table.c[n] for n in names] if names else list(table.c)
        self.names = tuple(c.name for c in cols)
        self.table = table.name
        self.cols = ", ".join(quote(n) for n in self.names)
        #: JSON columns go in as JSON (``json(col)``), parsed with the rest in one ``loads``
        self.packed = ", ".join(
            f"json({quote(c.name)})" if isinstance(c.type, JSON) else quote(c.name) for c in cols
        )
        #: positions of the timestamps (parsed before the dict is built)
        self.stamps = tuple(i for i, c in enumerate(cols) if isinstance(c.type, UTCDateTime))

    def rows(
        self, cur: sqlite3.Cursor, where: str, params: Sequence[Any], raw: str | None = None
    ) -> list[Row]:
        """The rows of ``SELECT cols FROM table <where>`` (in no particular order).

        ``raw``: also keep that column's stored value, as ``row["_raw"]``.
        """
        cur.execute(
            f"SELECT json_group_array(json_array({self.packed})) "
            f"FROM (SELECT {self.cols} FROM {self.table} {where})",
            params,
        )
        names, stamps = self.names, self.stamps
        raw_at = names.index(raw) if raw is not None else -1
        parse, loads = datetime.fromisoformat, json.loads
        out = []
        for values in loads(cur.fetchone()[0]):
            kept = values[raw_at] if raw_at >= 0 else None
            for i in stamps:
                value = values[i]
                if value is not None:
                    values[i] = parse(value + "+00:00")
            row = dict(zip(names, values, strict=True))
            if raw_at >= 0:
                row["_raw"] = kept
            out.append(row)
        return out


_INTENTS = Reader(INTENT)
_DUE_WHERE = "WHERE status = ? AND next_run_at <= ? ORDER BY next_run_at LIMIT ?"


def select_due(cur: sqlite3.Cursor, due_by: datetime, limit: int) -> tuple[list[Row], list[str]]:
    """Active rows due by ``due_by`` (soonest first, at most ``limit``), and their due texts."""
    rows = _INTENTS.rows(
        cur, _DUE_WHERE, (IntentStatus.ACTIVE, stamp(due_by), limit), raw="next_run_at"
    )
    rows.sort(key=lambda r: (r["next_run_at"], r["id"]))
    return rows, [r.pop("_raw") for r in rows]


def intents_by_id(
    cur: sqlite3.Cursor, ids: Sequence[int], names: Sequence[str], *, lock: bool = False
) -> list[Row]:
    """Some columns of the intents with these ids (``lock``: the write lock of ``BEGIN
    IMMEDIATE`` holds them already)."""
    reader = _reader(tuple(names))
    out: list[Row] = []
    for chunk in _chunks(ids):
        out.extend(reader.rows(cur, f"WHERE id IN ({_marks(len(chunk))})", chunk))
    return out


@cache
def _reader(names: tuple[str, ...]) -> Reader:
    return Reader(INTENT, names)


def soonest(cur: sqlite3.Cursor) -> datetime | None:
    """``min(next_run_at)`` of the active intents (one probe of the due index)."""
    cur.execute(frame_sql.SOONEST)
    value = cur.fetchone()[0]
    return None if value is None else _parse_stamp(value)


#: Rows with identical new values are updated by one ``... WHERE id IN (...)`` when at
#: least this many share them, on both engines; the others row by row.
GROUP_MIN = 3

_REF = re.compile(r"v\.column(\d+)|\?")


def _update_from(
    cur: sqlite3.Cursor, head: str, where: str, width: int, rows: list[Values], tail: Values
) -> int:
    """``UPDATE ... FROM (VALUES ...) AS v <where>`` per chunk of rows; returns rows hit.

    ``v.column1`` is the row id. Rows that share all their other values go in one
    ``UPDATE ... WHERE <table>.id IN (...)`` instead: SQLite runs ``UPDATE ... FROM``
    through a materialized join, about four times the cost per row (measured here).
    """
    groups: dict[Values, list[Any]] = {}
    for row in rows:
        groups.setdefault(row[1:], []).append(row[0])
    single: list[Values] = []
    hit = 0
    for values, ids in groups.items():
        if len(ids) < GROUP_MIN:
            single.extend((i, *values) for i in ids)
            continue
        for start in range(0, len(ids), CHUNK):
            hit += _update_in(cur, head, where, values, ids[start : start + CHUNK], tail)
    for start in range(0, len(single), CHUNK):
        chunk = single[start : start + CHUNK]
        params = list(chain.from_iterable(chunk))
        params.extend(tail)
        cur.execute(f"{head} FROM (VALUES {_values(len(chunk), width)}) AS v {where}", params)
        hit += cur.rowcount
    return hit


def _update_in(
    cur: sqlite3.Cursor, head: str, where: str, values: Values, ids: list[Any], tail: Values
) -> int:
    """One ``UPDATE`` of the rows ``ids`` that all get ``values`` (``v.columnN`` bound)."""
    params: list[Any] = []
    extra = iter(tail)
    in_list = f"IN ({_marks(len(ids))})"

    def bind(match: re.Match[str]) -> str:
        column = match.group(1)
        if column is None:  # a plain ? of the tail
            params.append(next(extra))
            return "?"
        if column == "1":
            params.extend(ids)
            return in_list
        params.append(values[int(column) - 2])
        return "?"

    sql = _REF.sub(bind, f"{head} {where}").replace(f"id = {in_list}", f"id {in_list}")
    cur.execute(sql, params)
    return cur.rowcount


_CAS_HEAD = (
    "UPDATE intent SET status = v.column2, lease_owner = v.column3, lease_until = v.column4, "
    "attempts = attempts + v.column5, fires = fires + v.column6, next_run_at = v.column7, "
    "last_fired_at = v.column8, pending_trigger = NULL, pending_event_id = NULL, "
    "updated_at = v.column9"
)
_CAS_WHERE = (
    "WHERE intent.id = v.column1 AND intent.status = ? AND intent.next_run_at <= ? "
    "AND intent.next_run_at = v.column10"
)


class Cas(NamedTuple):
    """One row's compare-and-set in a claim: the row as selected (``id``, its stored
    ``due`` text) and the values it gets (``attempts``/``fires`` are increments)."""

    id: int
    due: str
    status: str
    owner: str | None
    until: Any  # lease expiry (datetime or its stored text)
    attempts: int
    fires: int
    next_run_at: datetime | None
    fired_at: Any  # last_fired_at (datetime or its stored text)


def cas(cur: sqlite3.Cursor, rows: Iterable[Cas], now: datetime, due_by: datetime) -> int:
    """The claim's compare-and-set for each row; returns the rows hit.

    ``UPDATE intent SET status=?, lease_owner=?, lease_until=?, ... WHERE id=? AND
    status='active' AND next_run_at<=? AND next_run_at=?``, for all rows in one statement.
    """
    now_s = stamp(now)
    # By position (a Cas is a tuple), in the order of v.column1..10: id, status, owner,
    # until, attempts, fires, next_run_at, fired_at, now, due.
    params = [
        (r[0], r[2], r[3], _stamp(r[4]), r[5], r[6], _stamp(r[7]), _stamp(r[8]), now_s, r[1])
        for r in rows
    ]
    if not params:
        return 0
    return _update_from(
        cur, _CAS_HEAD, _CAS_WHERE, 10, params, (IntentStatus.ACTIVE, stamp(due_by))
    )


_RUN_NAMES = tuple(c.name for c in RUN.c)
_RUN_STAMPS = tuple(i for i, c in enumerate(RUN.c) if isinstance(c.type, UTCDateTime))
_pick_run = itemgetter(*_RUN_NAMES)
_RUN_INSERT = f"INSERT INTO intent_run ({', '.join(quote(n) for n in _RUN_NAMES)}) VALUES "


def insert_runs(cur: sqlite3.Cursor, rows: list[Row]) -> list[Row]:
    """Insert run rows with ids max + 1, ... (the caller holds the write lock); returns
    them (the same dicts, their ``id`` set)."""
    cur.execute("SELECT max(id) FROM intent_run")
    top = cur.fetchone()[0] or 0
    params: list[Any] = []
    for k, row in enumerate(rows, start=top + 1):
        row["id"] = k
        values = list(_pick_run(row))
        for i in _RUN_STAMPS:
            value = values[i]
            if value is not None:
                values[i] = _stamp(value)
        params.append(values)
    _insert(cur, _RUN_INSERT, len(_RUN_NAMES), params)
    return rows


def _insert(
    cur: sqlite3.Cursor, head: str, width: int, rows: list[list[Any]] | list[Values]
) -> None:
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        cur.execute(head + _values(len(chunk), width), list(chain.from_iterable(chunk)))


def open_runs(cur: sqlite3.Cursor, run_ids: Sequence[int]) -> set[int]:
    """Which of these runs are still ``running``."""
    found: set[int] = set()
    for chunk in _chunks(run_ids):
        cur.execute(
            "SELECT json_group_array(id) FROM intent_run "
            f"WHERE id IN ({_marks(len(chunk))}) AND status = ?",
            (*chunk, RunStatus.RUNNING),
        )
        found.update(json.loads(cur.fetchone()[0]))
    return found


def close_runs(cur: sqlite3.Cursor, columns: Sequence[str], updates: Sequence[Values]) -> None:
    """Record outcomes on runs: ``(run_id, *values of columns)`` each (timestamps as
    datetimes, JSON columns as Python values)."""
    if not updates:
        return
    sets = ", ".join(f"{quote(k)} = v.column{i}" for i, k in enumerate(columns, start=2))
    kinds = [RUN.c[k].type for k in columns]
    stamped = [j for j, t in enumerate(kinds, start=1) if isinstance(t, UTCDateTime)]
    packed = [j for j, t in enumerate(kinds, start=1) if isinstance(t, JSON)]
    params: list[Values] = []
    for u in updates:
        row = list(u)
        for j in stamped:
            row[j] = _stamp(row[j])
        for j in packed:
            if row[j] is not None:
                row[j] = json.dumps(row[j])
        params.append(tuple(row))
    _update_from(
        cur,
        f"UPDATE intent_run SET {sets}",
        "WHERE intent_run.id = v.column1",
        len(columns) + 1,
        params,
        (),
    )


def update_after(
    cur: sqlite3.Cursor, columns: Sequence[str], updates: Sequence[tuple[int, Row]], owner: str
) -> None:
    """Apply completion values ``(intent_id, {column: value})`` to intents still ``firing``
    under ``owner``'s lease."""
    sets = ", ".join(f"{quote(k)} = v.column{i}" for i, k in enumerate(columns, start=2))
    pick = itemgetter(*columns) if len(columns) > 1 else (lambda row: (row[columns[0]],))
    stamped = [
        j for j, k in enumerate(columns, start=1) if isinstance(INTENT.c[k].type, UTCDateTime)
    ]
    params: list[Values] = []
    for i, values in updates:
        row = [i, *pick(values)]
        for j in stamped:
            value = row[j]
            if value is not None:
                row[j] = _stamp(value)
        params.append(tuple(row))
    if params:
        _update_from(
            cur,
            f"UPDATE intent SET {sets}",
            "WHERE intent.id = v.column1 AND intent.status = ? AND intent.lease_owner = ?",
            len(columns) + 1,
            params,
            (IntentStatus.FIRING, owner),
        )


def insert_journal(cur: sqlite3.Cursor, rows: Iterable[Row]) -> None:
    params = [(stamp(r["at"]), r["actor"], r["action"], r["subject"], r["detail"]) for r in rows]
    _insert(cur, "INSERT INTO journal (at, actor, action, subject, detail) VALUES ", 5, params)


def _chunks(ids: Sequence[int]) -> Iterable[tuple[int, ...]]:
    ids = list(ids)
    for start in range(0, len(ids), CHUNK):
        yield tuple(ids[start : start + CHUNK])
