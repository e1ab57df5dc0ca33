"""Contract: PostgreSQL's batch statements of the claim path (``goalsui.store.claims.pg_hot``,
one statement per batch over column arrays) write and read exactly what the generic Core
statements do, and their plans stay "by primary key" when the statistics are stale."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.engine import Engine

from goalsui.service import Service
from goalsui.store.claims import pg_hot
from goalsui.store.claims.binds import INTENT, RUN, rows
from goalsui.store.claims.planner import new_run
from goalsui.store.claims.primitives import HotPrimitives, SqlPrimitives
from goalsui.store.claims.shapes import Cas
from goalsui.store.claims.statements import AFTER_COLUMNS, RUN_DONE_COLUMNS
from tests.claims_kit import claims_for

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
OWNER = "host:1:abc"


@pytest.fixture
def engine(pg_db: str, empty_kb: Path, make_service: Callable[..., Service]) -> Iterator[Engine]:
    service = make_service(empty_kb, pg_db)
    yield service.store.engine


def _intents(engine: Engine, n: int, **values: Any) -> list[int]:
    row = {
        "title": "t",
        "instruction": "x",
        "kind": "at",
        "status": "active",
        "schedule": T0.isoformat(),
        "timezone": "UTC",
        "next_run_at": T0,
        "cooldown_s": 0,
        "fires": 0,
        "attempts": 0,
        "consecutive_failures": 0,
        "created_at": T0,
        "updated_at": T0,
    }
    row.update(values)
    with engine.begin() as conn:
        result = conn.execute(
            insert(INTENT).returning(INTENT.c.id, sort_by_parameter_order=True),
            [dict(row, title=f"t{k}") for k in range(n)],
        )
        return list(result.scalars().all())


def _both(engine: Engine) -> tuple[SqlPrimitives, SqlPrimitives]:
    return HotPrimitives(engine.dialect, pg_hot), SqlPrimitives(engine.dialect)


def _runs(engine: Engine, ids: list[int]) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        found = rows(conn.execute(select(RUN).where(RUN.c.id.in_(ids)).order_by(RUN.c.id)))
    for r in found:
        r.pop("id")
    return found


def test_postgres_gets_the_batch_primitives(engine: Engine) -> None:
    p = claims_for(engine).p
    assert isinstance(p, HotPrimitives) and p.hot is pg_hot


def _run_rows(intent_ids: list[int]) -> list[dict[str, Any]]:
    """Runs of every shape: values shared by all, by some, by none; JSON; ints as floats."""
    out = []
    for k, intent_id in enumerate(intent_ids):
        out.append(
            new_run(
                intent_id=intent_id,
                attempt=1 + k % 3,
                trigger="schedule" if k % 2 else "event",
                status="running" if k % 4 else "skipped",
                reason=None if k % 4 else "quiet-hours",
                planned_at=T0 + timedelta(seconds=k),
                started_at=T0,
                finished_at=None if k % 4 else T0,
                owner=OWNER,
                cost_usd=[None, 1, 2.5][k % 3],
                argv=["a", "b c", {"k": k}] if k % 5 == 0 else None,
                tool_session={"tools": ["x"]} if k == 3 else None,
                dismissed=k == 7,
            )
        )
    return out


@pytest.mark.parametrize("n", [1, 2, 37])
def test_inserted_runs_match_the_core_insert_and_their_ids(engine: Engine, n: int) -> None:
    hot, core = _both(engine)
    intent_ids = _intents(engine, n)
    with engine.begin() as conn:
        a = hot.insert_runs(conn, _run_rows(intent_ids))
        b = core.insert_runs(conn, _run_rows(intent_ids))
    # Every row got the id of its own record.
    for row in a:
        (stored,) = _runs(engine, [row["id"]])
        assert stored == {k: v for k, v in row.items() if k != "id"}
    assert _runs(engine, [r["id"] for r in a]) == _runs(engine, [r["id"] for r in b])


def test_closed_runs_match_the_core_update(engine: Engine) -> None:
    hot, core = _both(engine)
    intent_ids = _intents(engine, 12)
    with engine.begin() as conn:
        a = [r["id"] for r in hot.insert_runs(conn, _run_rows(intent_ids))]
        b = [r["id"] for r in core.insert_runs(conn, _run_rows(intent_ids))]

    def outcomes(ids: list[int]) -> list[tuple[Any, ...]]:
        out = []
        for k, run_id in enumerate(ids):
            values: dict[str, Any] = {c: None for c in RUN_DONE_COLUMNS}
            values.update(
                status="ok" if k % 3 else "failed",
                reason=None if k % 3 else "exit 1",
                finished_at=T0 + timedelta(minutes=1),
                exit_code=0 if k % 3 else 1,
                output_tail="out\n" * k,
                tokens_in=k * 1000 if k % 2 else None,
                cost_usd=[0, 0.25, None][k % 3],
                argv=["claude", "-p", str(k)] if k % 2 else None,
                needs_review=k == 5,
            )
            out.append((run_id, *(values[c] for c in RUN_DONE_COLUMNS)))
        return out

    with engine.begin() as conn:
        hot.close_runs(conn, outcomes(a))
        core.close_runs(conn, outcomes(b))
    assert _runs(engine, a) == _runs(engine, b)
    assert {r["status"] for r in _runs(engine, a)} == {"ok", "failed"}


def _intent_rows(engine: Engine, ids: list[int]) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        found = rows(conn.execute(select(INTENT).where(INTENT.c.id.in_(ids)).order_by(INTENT.c.id)))
    for r in found:
        r.pop("id")
        r.pop("title")
    return found


def test_claims_and_outcomes_on_intents_match_the_core_updates(engine: Engine) -> None:
    hot, core = _both(engine)
    a = _intents(engine, 9)
    b = _intents(engine, 9)
    now, until = T0 + timedelta(seconds=1), T0 + timedelta(seconds=31)

    def cas_rows(ids: list[int]) -> list[Cas]:
        out = []
        for k, i in enumerate(ids):
            if k % 3:
                out.append(Cas(i, T0, "firing", OWNER, until, 1, 1, None, now))  # type: ignore[arg-type]  # PostgreSQL's due is a datetime (Cas.due says SQLite's text)
            else:  # a skip with a next due time
                out.append(Cas(i, T0, "active", None, None, 0, 0, T0 + timedelta(hours=k + 1), T0))  # type: ignore[arg-type]  # PostgreSQL's due is a datetime (Cas.due says SQLite's text)
        return out

    with engine.begin() as conn:
        assert hot.cas(conn, cas_rows(a), now, now) == 9
        assert core.cas(conn, cas_rows(b), now, now) == 9
    assert _intent_rows(engine, a) == _intent_rows(engine, b)
    # A second claim of the same occurrences misses every row (none is active and due).
    with engine.begin() as conn:
        assert hot.cas(conn, cas_rows(a), now, now) == 0
    # A row selected with a due time that changed since is missed.
    (c,) = _intents(engine, 1)
    stale = Cas(c, T0 - timedelta(seconds=1), "firing", OWNER, until, 1, 1, None, now)  # type: ignore[arg-type]  # PostgreSQL's due is a datetime (Cas.due says SQLite's text)
    fresh = Cas(c, T0, "firing", OWNER, until, 1, 1, None, now)  # type: ignore[arg-type]  # PostgreSQL's due is a datetime (Cas.due says SQLite's text)
    with engine.begin() as conn:
        assert hot.cas(conn, [stale], now, now) == 0
        assert hot.cas(conn, [fresh], now, T0 - timedelta(seconds=1)) == 0  # not due by then
        assert hot.cas(conn, [fresh], now, now) == 1

    def after(ids: list[int]) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for k, i in enumerate(ids):
            values: dict[str, Any] = {c: None for c in AFTER_COLUMNS}
            values.update(
                status="active" if k % 2 else "done",
                next_run_at=T0 + timedelta(hours=1) if k % 2 else None,
                consecutive_failures=k,
                last_error="boom" if k == 4 else None,
                updated_at=now,
            )
            out.append((i, values))
        return out

    with engine.begin() as conn:  # only rows still firing under OWNER change
        conn.execute(INTENT.update().where(INTENT.c.id.in_([a[1], b[1]])).values(lease_owner="x"))
        hot.update_after(conn, after(a), OWNER)
        core.update_after(conn, after(b), OWNER)
    got = _intent_rows(engine, a)
    assert got == _intent_rows(engine, b)
    assert got[1]["status"] == "firing" and got[1]["lease_owner"] == "x"
    assert got[0]["status"] == "active" and got[0]["consecutive_failures"] == 0  # not firing
    assert got[2]["status"] == "done" and got[2]["consecutive_failures"] == 2
    assert got[5]["status"] == "active" and got[5]["next_run_at"] == T0 + timedelta(hours=1)


def test_reads_match_the_core_reads(engine: Engine) -> None:
    hot, core = _both(engine)
    ids = _intents(engine, 5, runner={"command": ["true"]}, active_hours={"start": "08:00"})
    with engine.begin() as conn:
        assert hot.select_due(conn, T0, 10) == core.select_due(conn, T0, 10)
        assert hot.read_intents(
            conn, ids, ["id", "status", "next_run_at", "runner"], lock=True
        ) == (core.read_intents(conn, ids, ["id", "status", "next_run_at", "runner"], lock=True))
        assert hot.soonest(conn) == core.soonest(conn) == T0
        due, _ = hot.select_due(conn, T0, 10)
    assert all(r["next_run_at"].tzinfo is UTC for r in due)


def test_outcomes_of_many_firing_rows_are_joined_by_key_on_stale_statistics(
    engine: Engine,
) -> None:
    """Statistics gathered while no row was ``firing`` made the planner scan every
    firing row once per outcome (1,000 outcomes: 1,000,000 comparisons, seconds). The
    guard travels as arrays, so each outcome finds its intent by key instead."""
    ids = _intents(engine, 1000)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE intent"))
        conn.execute(
            INTENT.update().where(INTENT.c.id.in_(ids)).values(status="firing", lease_owner=OWNER)
        )
    updates = [
        (
            i,
            {c: None for c in AFTER_COLUMNS}
            | {"status": "done", "consecutive_failures": 0, "updated_at": T0},
        )
        for i in ids
    ]

    class Explained:
        """A cursor that explains (and runs) what it is given."""

        def __init__(self, cur: Any) -> None:
            self.cur = cur
            self.rowcount = 0

        def execute(self, sql: str, params: Any = None) -> None:
            self.cur.execute("EXPLAIN ANALYZE " + sql, params)

    with engine.begin() as conn:
        cur = pg_hot.cursor(conn)
        pg_hot.update_after(Explained(cur), updates, OWNER)  # type: ignore[arg-type]  # a cursor that EXPLAINs
        plan = "\n".join(r[0] for r in cur.fetchall())
        assert conn.execute(
            text("SELECT count(*) FROM intent WHERE status = 'done'")
        ).scalar() == len(ids)
    removed = sum(int(n) for n in re.findall(r"Rows Removed by Join Filter: (\d+)", plan))
    assert removed < 10 * len(ids), plan
