"""Every SQL text the SQLite fast path executes is a Core statement of the claim path,
compiled for SQLite, widened for many rows (goalsui.store.claims.sqlite_hot)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects import sqlite

from goalsui.store import frame_sql
from goalsui.store.claims import INTENT, RUN, Completion, sqlite_hot
from goalsui.store.claims import statements as st
from tests.base_kit import FakeClock
from tests.claims_kit import claims_for
from tests.contract.test_scheduler_claims import bulk_at


def compiled(statement: Any) -> str:
    return " ".join(statement.compile(dialect=sqlite.dialect()).string.split())


def one_row(sql: str) -> str:
    """An executed text folded back to the statement for one row: an ``IN`` list to
    SQLAlchemy's expanding token, ``FROM (VALUES ...) AS v`` gone and each ``v.columnN``
    a ``?`` again, a multi-row ``VALUES`` one group."""
    sql = re.sub(r"IN \(\?(,\?)*\)", "IN (__[POSTCOMPILE__ids])", sql)
    sql = re.sub(r" FROM \(VALUES \([?,]+\)(,\([?,]+\))*\) AS v", "", sql)
    sql = re.sub(r"v\.column\d+", "?", sql)
    return re.sub(r"VALUES (\([?, ]+\))(,\1)+$", r"VALUES \1", sql)


def inner_select(sql: str) -> str:
    """A read's own ``SELECT``: what ``json_group_array`` packs into one row (its columns
    labelled as a subquery's are)."""
    found = re.fullmatch(
        r"SELECT json_group_array\(.*?\) AS \w+ FROM \((SELECT .*)\) AS anon_1", sql
    )
    return re.sub(r"(\w+)\.(\w+) AS \2\b", r"\1.\2", found.group(1)) if found else sql


def test_every_executed_text_is_a_compiled_core_statement(
    empty_kb, make_service, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_service(empty_kb, clock=clock)
    now = clock.now
    # four rows due together (the group form) and two alone (UPDATE ... FROM (VALUES ...))
    bulk_at(svc, 4, now - timedelta(seconds=2))
    bulk_at(svc, 1, now - timedelta(seconds=1), prefix="b")
    bulk_at(svc, 1, now, prefix="c")

    seen: list[str] = []
    real = sqlite_hot.cursor

    class Recording:
        def __init__(self, cur: Any) -> None:
            self.cur = cur

        def execute(self, sql: str, params: Any = ()) -> Any:
            seen.append(sql)
            return self.cur.execute(sql, params)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.cur, name)

    monkeypatch.setattr(sqlite_hot, "cursor", lambda conn: Recording(real(conn)))
    backend = claims_for(svc.store.engine)
    res = backend.acquire(owner="me", now=now, lease_until=now + timedelta(seconds=30), limit=10)
    assert len(res.fired) == 6
    done = backend.release(
        owner="me",
        now=now,
        completions=[
            Completion(run_id=c.run["id"], intent_id=c.intent["id"], status="ok", argv=["x", "ü"])
            for c in res.fired
        ],
    )
    assert all(d.recorded and d.applied for d in done)
    backend.check_running([c.intent["id"] for c in res.fired])

    core = [
        *(compiled(s) for s in (st.CAS, st.CAS_GROUP, st.RUN_DONE, st.RUN_DONE_GROUP)),
        *(compiled(s) for s in (st.AFTER, st.AFTER_GROUP, st.JOURNAL_INSERT, st.OPEN_RUNS)),
        compiled(st.RUN_INSERT.values(id=bindparam("id"))),
        compiled(st.due(list(INTENT.c))),
        compiled(st.by_ids([INTENT.c[n] for n in st.AFTER_READ])),
        compiled(st.by_ids([INTENT.c[n] for n in st.RUNNING_READ])),
        compiled(select(func.max(RUN.c.id))),
        frame_sql.SOONEST,
    ]
    folded = [inner_select(one_row(sql)) for sql in seen]
    assert [sql for sql, one in zip(seen, folded, strict=True) if one not in core] == []
    # both forms of the compare-and-set and of the outcome writes ran
    for statement in (st.CAS, st.CAS_GROUP, st.RUN_DONE_GROUP, st.AFTER_GROUP):
        assert compiled(statement) in folded
    assert any(" FROM (VALUES (" in sql for sql in seen)
    assert "?" not in frame_sql.SOONEST  # the soonest probe binds nothing


def test_the_one_row_form_is_the_compiled_statement() -> None:
    """The widened texts fold back to exactly the statements they came from."""
    update = sqlite_hot.Update(st.CAS, st.CAS_GROUP, st.CAS_KEYS)
    rows = ",".join(["(" + ",".join("?" * len(st.CAS_KEYS)) + ")"] * 3)
    assert one_row(update.head + rows + update.where) == compiled(st.CAS)
    assert set(update.before + update.after) == {
        "pending_trigger",
        "pending_event_id",
        "_now",
        "status_1",
        "_dueby",
    }
    sql, params = update.group.bind({"_ids": [1, 2, 3]})
    assert one_row(sql) == compiled(st.CAS_GROUP)
    assert params[-6:-2] == [1, 2, 3, "active"]  # id IN (...) AND status = 'active'
