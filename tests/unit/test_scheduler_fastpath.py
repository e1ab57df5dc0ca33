"""The SQLite hot path (goalsui.store.claims.sqlite_hot): same rows, same compare-and-set, as Core."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from goalsui.service import Service
from goalsui.store import claims
from goalsui.store.claims import INTENT, Completion, sqlite_hot
from goalsui.store.claims.binds import rows, stamp
from goalsui.store.claims.shapes import Cas
from goalsui.store.claims.statements import AFTER_COLUMNS
from goalsui.store.models import Intent
from tests.base_kit import FakeClock
from tests.claims_kit import claims_for
from tests.contract.test_scheduler_claims import bulk_at


def _odd_intent(svc: Service, when: datetime) -> int:
    """An intent whose columns exercise every conversion: JSON, timestamps, quotes, unicode."""
    row = Intent(
        title='naïve "quoted" title, with a\nnewline and \\ backslash ✓',
        instruction="[1, 2]",  # JSON-looking text stays text
        kind="event",
        event_source="gh",
        event_filter={"action": ["opened", "closed"], "n": 1.5, "none": None},
        active_hours={"start": "08:00", "end": "22:00", "timezone": "Europe/Berlin"},
        runner={"command": ["echo", "ü"]},
        next_run_at=when,
        expires_at=when + timedelta(days=3, microseconds=7),
        last_fired_at=when - timedelta(hours=1),
        max_fires=9,
        created_at=when,
        updated_at=when,
    )
    with svc.store.write() as s:
        s.add(row)
        s.flush()
        return row.id


def test_reader_returns_what_core_returns(empty_kb, make_service, clock: FakeClock):
    svc = make_service(empty_kb, clock=clock)
    odd = _odd_intent(svc, clock.now)
    plain = bulk_at(svc, 3, clock.now)
    ids = [odd, *plain]
    with svc.store.engine.begin() as conn:
        core = {r["id"]: r for r in rows(conn.execute(INTENT.select()))}
        fast = {
            r["id"]: r
            for r in sqlite_hot.intents_by_id(sqlite_hot.cursor(conn), ids, list(core[odd]))
        }
    assert fast == core
    assert fast[odd]["event_filter"] == {"action": ["opened", "closed"], "n": 1.5, "none": None}
    assert fast[odd]["instruction"] == "[1, 2]"
    assert fast[odd]["expires_at"] == clock.now + timedelta(days=3, microseconds=7)
    assert fast[odd]["expires_at"].tzinfo is UTC


def test_due_rows_soonest_first_with_their_stored_due_text(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    later = bulk_at(svc, 2, clock.now + timedelta(seconds=5), prefix="later")
    first = bulk_at(svc, 2, clock.now - timedelta(seconds=5), prefix="first")
    bulk_at(svc, 2, clock.now + timedelta(hours=1), prefix="future")
    with svc.store.engine.begin() as conn:
        cur = sqlite_hot.cursor(conn)
        rows, texts = sqlite_hot.select_due(cur, clock.now + timedelta(seconds=10), 10)
        assert sqlite_hot.soonest(cur) == clock.now - timedelta(seconds=5)
    assert [r["id"] for r in rows] == [*first, *later]
    assert "_raw" not in rows[0]
    assert texts[0] == stamp(clock.now - timedelta(seconds=5))


def _cas_row(clock: FakeClock, intent_id: int, due: str) -> Cas:
    """The claim's compare-and-set for one row (fire it, owner ``me``)."""
    return Cas(
        intent_id, due, "firing", "me", clock.now + timedelta(seconds=30), 1, 1, None, clock.now
    )


def test_compare_and_set_misses_a_row_that_moved(empty_kb, make_service, clock: FakeClock):
    svc = make_service(empty_kb, clock=clock)
    a, b = bulk_at(svc, 2, clock.now)
    now = stamp(clock.now)

    stale = stamp(clock.now - timedelta(seconds=1))  # as if someone moved it since
    with svc.store.engine.begin() as conn:
        hit = sqlite_hot.cas(
            sqlite_hot.cursor(conn),
            [_cas_row(clock, a, now), _cas_row(clock, b, stale)],
            clock.now,
            clock.now,
        )
    assert hit == 1
    got = {i.id: i for i in svc.intents.list()}
    assert (got[a].status, got[a].lease_owner, got[a].attempts) == ("firing", "me", 1)
    assert got[a].lease_until == clock.now + timedelta(seconds=30)
    assert (got[b].status, got[b].lease_owner, got[b].attempts) == ("active", None, 0)


def test_grouped_compare_and_set_still_misses_the_row_that_moved(
    empty_kb, make_service, clock: FakeClock
):
    """Rows sharing their new values go in one ``WHERE id IN (...)`` update: a moved row
    (its due text differs) is still missed, a lost guard row too, and the rest hit."""
    svc = make_service(empty_kb, clock=clock)
    ids = bulk_at(svc, 6, clock.now)
    now = stamp(clock.now)
    stale = stamp(clock.now - timedelta(seconds=1))
    with svc.store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE intent SET status = 'paused' WHERE id = ?", (ids[5],))

    rows = [_cas_row(clock, i, now) for i in ids[:4]] + [
        _cas_row(clock, ids[4], stale),
        _cas_row(clock, ids[5], now),
    ]
    with svc.store.engine.begin() as conn:
        hit = sqlite_hot.cas(sqlite_hot.cursor(conn), rows, clock.now, clock.now)
    assert hit == 4
    got = {i.id: i for i in svc.intents.list()}
    assert [got[i].status for i in ids] == ["firing"] * 4 + ["active", "paused"]
    assert {got[i].lease_until for i in ids[:4]} == {clock.now + timedelta(seconds=30)}
    assert [got[i].attempts for i in ids] == [1, 1, 1, 1, 0, 0]

    # Completion values: three rows share them (one IN update), one differs (UPDATE FROM),
    # and a row someone else holds is left alone even inside the group.
    with svc.store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE intent SET lease_owner = 'other' WHERE id = ?", (ids[3],))
    later = clock.now + timedelta(minutes=5)
    unset = dict.fromkeys(AFTER_COLUMNS, None) | {"consecutive_failures": 0, "updated_at": later}
    done = unset | {"status": "done"}
    retry = unset | {"status": "active", "next_run_at": later}
    updates = [(ids[0], done), (ids[1], done), (ids[3], done), (ids[2], retry)]
    with svc.store.engine.begin() as conn:
        sqlite_hot.update_after(sqlite_hot.cursor(conn), updates, "me")
    got = {i.id: i for i in svc.intents.list()}
    assert [(got[i].status, got[i].lease_owner) for i in ids[:4]] == [
        ("done", None),
        ("done", None),
        ("active", None),
        ("firing", "other"),
    ]
    assert got[ids[2]].next_run_at == later
    assert got[ids[0]].updated_at == later


def test_batches_bigger_than_a_statement_chunk(empty_kb, make_service, clock: FakeClock):
    """More rows than one statement takes: claimed, started and completed exactly once."""
    svc = make_service(empty_kb, clock=clock)
    n = sqlite_hot.CHUNK * 2 + 37
    ids = bulk_at(svc, n, clock.now)
    engine, now = svc.store.engine, clock.now
    fired: list[claims.Claimed] = []
    while True:
        res = claims_for(engine).acquire(
            owner="me",
            now=now,
            lease_until=now + timedelta(seconds=30),
            limit=n,
        )
        if not res.fired:
            break
        fired.extend(res.fired)
    assert sorted(c.intent["id"] for c in fired) == sorted(ids)
    done = claims_for(engine).release(
        owner="me",
        now=now + timedelta(seconds=1),
        completions=[
            Completion(
                run_id=c.run["id"],
                intent_id=c.intent["id"],
                status="ok" if k % 2 else "failed",
                reason=None if k % 2 else "boom 'x'",
                exit_code=k % 2 - 1,
                snapshot=(c.intent["kind"], c.intent["schedule"], c.intent["timezone"]),
            )
            for k, c in enumerate(fired)
        ],
    )
    assert len(done) == n and all(r.recorded and r.applied for r in done)
    runs = svc.runs.list(limit=10 * n)
    assert len(runs) == n and len({r.intent_id for r in runs}) == n
    by_status = {s: [r for r in runs if r.status == s] for s in ("ok", "failed")}
    assert len(by_status["ok"]) == n // 2 and len(by_status["failed"]) == n - n // 2
    assert all(r.finished_at == now + timedelta(seconds=1) for r in runs)
    assert {r.reason for r in by_status["failed"]} == {"boom 'x'"}
    intents = {i.id: i for i in svc.intents.list()}
    assert {intents[r.intent_id].status for r in by_status["ok"]} == {"done"}
    retry = [intents[r.intent_id] for r in by_status["failed"]]
    assert {(i.status, i.pending_trigger, i.lease_owner) for i in retry} == {
        ("active", "retry", None)
    }
    # retried 2**1 s after the failure was recorded (at now + 1 s)
    assert {i.next_run_at for i in retry} == {now + timedelta(seconds=3)}


def test_a_completion_leaves_an_intent_it_no_longer_owns(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    (intent_id,) = bulk_at(svc, 1, clock.now)
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner="me",
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=5,
    )
    (item,) = res.fired
    svc.intents.cancel(intent_id)
    (done,) = claims_for(svc.store.engine).release(
        owner="me",
        now=now,
        completions=[Completion(run_id=item.run["id"], intent_id=intent_id, status="failed")],
    )
    assert done.recorded and not done.applied
    intent = svc.intents.get(intent_id)
    assert (intent.status, intent.lease_owner, intent.consecutive_failures) == (
        "cancelled",
        None,
        0,
    )
