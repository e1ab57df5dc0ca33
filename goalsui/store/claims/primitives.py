"""The statement-level operations of the claim path, one class per kind of engine.

:class:`SqlPrimitives` is generic SQLAlchemy Core; whether the engine has row locks
(``SELECT ... FOR UPDATE [SKIP LOCKED]``, PostgreSQL) is a capability decided once, at
construction, from the dialect. :class:`HotPrimitives` sends the same work straight
through the DBAPI cursor: on SQLite the same Core statements compiled once, on PostgreSQL
(psycopg) fixed text over column arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.engine import Connection, Dialect

from goalsui.store.claims import sqlite_hot
from goalsui.store.claims.binds import INTENT, RUN, stamper
from goalsui.store.claims.binds import rows as dicts
from goalsui.store.claims.planner import RunOutcome
from goalsui.store.claims.shapes import Cas, Row
from goalsui.store.claims.statements import (
    AFTER,
    AFTER_COLUMNS,
    AFTER_GROUP,
    CAS,
    CAS_GROUP,
    CAS_KEYS,
    GROUP_MIN,
    JOURNAL_INSERT,
    OPEN_RUNS,
    RUN_DONE,
    RUN_DONE_GROUP,
    RUN_DONE_KEYS,
    RUN_INSERT,
    SOONEST,
    by_ids,
    due,
)


class SqlPrimitives:
    """Generic SQL (Core statements); row locks when the dialect has them."""

    def __init__(self, dialect: Dialect) -> None:
        #: ``SELECT ... FOR UPDATE [SKIP LOCKED]`` holds the selected rows until commit, or
        #: passes over another scheduler's locked rows (PostgreSQL)
        self.row_locks = dialect.name == "postgresql"
        self.sqlite = dialect.name == "sqlite"
        self.stamp = stamper(self.sqlite)

    def lock(self, query: Any, *, skip_locked: bool = False) -> Any:
        """``query`` with row locks where the engine has them (else as it is)."""
        if not self.row_locks:
            return query
        return query.with_for_update(skip_locked=skip_locked)

    # -- reads ---------------------------------------------------------------------------------
    def select_due(
        self, conn: Connection, due_by: datetime, limit: int
    ) -> tuple[list[Row], list[Any]]:
        """Active rows due by ``due_by`` (soonest first), locked, and their due values."""
        query = self.lock(due(list(INTENT.c)), skip_locked=True)
        rows = dicts(conn.execute(query, {"_dueby": due_by, "_limit": limit}))
        return rows, [row["next_run_at"] for row in rows]

    def read_intents(
        self, conn: Connection, ids: Sequence[int], names: Sequence[str], *, lock: bool = False
    ) -> list[Row]:
        """Some columns of the intents with these ids (locked with ``lock``)."""
        q = by_ids([INTENT.c[n] for n in names])
        return dicts(conn.execute(self.lock(q) if lock else q, {"_ids": list(ids)}))

    def open_runs(self, conn: Connection, run_ids: Sequence[int]) -> set[int]:
        """Which of these runs are still ``running`` (locked)."""
        found = conn.execute(self.lock(OPEN_RUNS), {"_ids": list(run_ids)})
        return set(found.scalars().all())

    def soonest(self, conn: Connection) -> datetime | None:
        value: datetime | None = conn.execute(SOONEST).scalar()
        return value

    # -- writes --------------------------------------------------------------------------------
    def cas(self, conn: Connection, rows: list[Cas], now: datetime, due_by: datetime) -> int:
        """The claim's compare-and-set of each row; returns the rows hit."""
        call = {"_now": self.stamp(now), "_dueby": self.stamp(due_by)}
        params = [dict(zip(CAS_KEYS, c, strict=True)) | call for c in rows]
        return self.apply(conn, params, per_row=CAS, grouped=CAS_GROUP)

    def insert_runs(self, conn: Connection, rows: list[Row]) -> list[Row]:
        """Insert run rows; returns them (the same dicts, in order) with their ids set."""
        if not rows:
            return []
        result = conn.execute(RUN_INSERT.returning(RUN.c.id, sort_by_parameter_order=True), rows)
        for row, run_id in zip(rows, result.scalars().all(), strict=True):
            row["id"] = run_id
        return rows

    def insert_journal(self, conn: Connection, rows: list[Row]) -> None:
        if rows:
            conn.execute(JOURNAL_INSERT, rows)

    def close_runs(self, conn: Connection, outcomes: list[RunOutcome]) -> None:
        """Write each run's outcome (``(run_id, *RUN_DONE_COLUMNS values)``)."""
        params = [dict(zip(RUN_DONE_KEYS, u, strict=True)) for u in outcomes]
        self.apply(conn, params, per_row=RUN_DONE, grouped=RUN_DONE_GROUP)

    def update_after(self, conn: Connection, updates: list[tuple[int, Row]], owner: str) -> None:
        """Set the completion values on intents still ``firing`` under ``owner``'s lease."""
        params = [
            {"_id": i, "_owner": owner, **{f"v_{k}": full[k] for k in AFTER_COLUMNS}}
            for i, full in updates
        ]
        self.apply(conn, params, per_row=AFTER, grouped=AFTER_GROUP)

    @staticmethod
    def apply(conn: Connection, rows: list[Row], *, per_row: Any, grouped: Any) -> int:
        """Run ``per_row`` (``id == :_id``) or ``grouped`` (``id IN :_ids``) updates; returns
        the rows hit."""
        if not rows:
            return 0
        groups: dict[tuple[Any, ...], list[Row]] = {}
        singles: list[Row] = []
        for row in rows:
            try:
                key = tuple(sorted((k, v) for k, v in row.items() if k != "_id"))
                groups.setdefault(key, []).append(row)
            except TypeError:  # an unhashable value: row by row
                singles.append(row)
        hit = 0
        for key, members in groups.items():
            if len(members) >= GROUP_MIN:
                params = dict(key)
                params["_ids"] = [m["_id"] for m in members]
                hit += conn.execute(grouped, params).rowcount
            else:
                singles.extend(members)
        if singles:
            hit += conn.execute(per_row, singles).rowcount
        return hit


class HotPath(Protocol):
    """The functions :mod:`goalsui.store.claims.sqlite_hot` and :mod:`goalsui.store.claims.pg_hot`
    both define (each module is one); ``cur``: the module's ``cursor(conn)``."""

    def cursor(self, conn: Connection) -> Any: ...
    def select_due(self, cur: Any, due_by: datetime, limit: int) -> tuple[list[Row], list[Any]]: ...
    def intents_by_id(
        self, cur: Any, ids: Sequence[int], names: Sequence[str], *, lock: bool
    ) -> list[Row]: ...
    def open_runs(self, cur: Any, run_ids: Sequence[int]) -> set[int]: ...
    def soonest(self, cur: Any) -> datetime | None: ...
    def cas(self, cur: Any, rows: list[Cas], now: datetime, due_by: datetime) -> int: ...
    def insert_runs(self, cur: Any, rows: list[Row]) -> list[Row]: ...
    def insert_journal(self, cur: Any, rows: list[Row]) -> None: ...
    def close_runs(self, cur: Any, updates: list[RunOutcome]) -> None: ...
    def update_after(self, cur: Any, updates: list[tuple[int, Row]], owner: str) -> None: ...


class HotPrimitives(SqlPrimitives):
    """The hot statements through the DBAPI cursor: ``hot`` is
    :mod:`goalsui.store.claims.sqlite_hot` (under the ``BEGIN IMMEDIATE`` write lock) or
    :mod:`goalsui.store.claims.pg_hot` (each batch one statement over column arrays)."""

    def __init__(self, dialect: Dialect, hot: HotPath) -> None:
        super().__init__(dialect)
        self.hot = hot

    def select_due(
        self, conn: Connection, due_by: datetime, limit: int
    ) -> tuple[list[Row], list[Any]]:
        return self.hot.select_due(self.hot.cursor(conn), due_by, limit)

    def read_intents(
        self, conn: Connection, ids: Sequence[int], names: Sequence[str], *, lock: bool = False
    ) -> list[Row]:
        return self.hot.intents_by_id(self.hot.cursor(conn), list(ids), names, lock=lock)

    def open_runs(self, conn: Connection, run_ids: Sequence[int]) -> set[int]:
        return self.hot.open_runs(self.hot.cursor(conn), run_ids)

    def soonest(self, conn: Connection) -> datetime | None:
        return self.hot.soonest(self.hot.cursor(conn))

    def cas(self, conn: Connection, rows: list[Cas], now: datetime, due_by: datetime) -> int:
        return self.hot.cas(self.hot.cursor(conn), rows, now, due_by)

    def insert_runs(self, conn: Connection, rows: list[Row]) -> list[Row]:
        return self.hot.insert_runs(self.hot.cursor(conn), rows) if rows else []

    def insert_journal(self, conn: Connection, rows: list[Row]) -> None:
        if rows:
            self.hot.insert_journal(self.hot.cursor(conn), rows)

    def close_runs(self, conn: Connection, outcomes: list[RunOutcome]) -> None:
        self.hot.close_runs(self.hot.cursor(conn), outcomes)

    def update_after(self, conn: Connection, updates: list[tuple[int, Row]], owner: str) -> None:
        self.hot.update_after(self.hot.cursor(conn), updates, owner)


def primitives_for(dialect: Dialect) -> SqlPrimitives:
    """The primitives for an engine's dialect (decided once per backend)."""
    if dialect.name == "sqlite":
        return HotPrimitives(dialect, sqlite_hot)
    if dialect.name == "postgresql" and dialect.driver == "psycopg":
        from goalsui.store.claims import pg_hot  # psycopg is loaded for PostgreSQL only

        return HotPrimitives(dialect, pg_hot)
    return SqlPrimitives(dialect)
