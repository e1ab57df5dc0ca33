"""Claims on SQLite and PostgreSQL: several schedulers on one database never fire an occurrence twice."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from datetime import datetime, timedelta

from conftest import FakeClock
from test_scheduler_rules import FakeTurn

from goalsui.domain.models import Intent, IntentRun
from goalsui.scheduler import Scheduler
from goalsui.scheduler.rules import decide_claim
from goalsui.service import Service
from goalsui.store import claims


def bulk_at(svc: Service, n: int, when: datetime, prefix: str = "i") -> list[int]:
    """``n`` one-shot intents due at ``when`` (one transaction)."""
    rows = [
        Intent(
            title=f"{prefix}{k}",
            instruction="x",
            kind="at",
            schedule=when.isoformat(),
            next_run_at=when,
            created_at=when,
            updated_at=when,
        )
        for k in range(n)
    ]
    with svc.store.write() as s:
        s.add_all(rows)
        s.flush()
        return [r.id for r in rows]  # type: ignore[misc]


async def test_two_schedulers_fire_every_intent_exactly_once(
    db_url, empty_kb, make_service, clock: FakeClock
):
    a_svc = make_service(empty_kb, db_url, clock=clock)
    b_svc = make_service(empty_kb, db_url, clock=clock)  # its own engine: another "process"
    ids = bulk_at(a_svc, 300, clock.now)
    turns = [FakeTurn(), FakeTurn()]
    scheds = [
        Scheduler(a_svc, clock=clock, turn=turns[0], owner="a", max_concurrency=40),
        Scheduler(b_svc, clock=clock, turn=turns[1], owner="b", max_concurrency=40),
    ]

    async def work(s: Scheduler) -> None:
        while await s.tick():
            await s.drain()
        await s.drain()

    try:
        await asyncio.gather(*(work(s) for s in scheds))
        await asyncio.gather(*(work(s) for s in scheds))  # a straggler batch, if any
    finally:
        for s in scheds:
            await s.stop()
    fired = Counter(c.intent.id for t in turns for c in t.calls)
    assert set(fired) == set(ids) and set(fired.values()) == {1}
    runs = a_svc.list_runs(limit=10_000)
    assert Counter(r.intent_id for r in runs if r.status == "ok") == Counter(ids)
    assert {r.status for r in runs} == {"ok"}
    assert {i.status for i in a_svc.list_intents()} == {"done"}


async def test_a_burst_starts_every_due_turn_before_recording_outcomes(
    empty_kb, make_service, clock: FakeClock
):
    """More rows due than one claim takes: the tick claims and starts them all first (a
    turn that ended frees its slot at once); the outcomes are recorded after, once each."""
    svc = make_service(empty_kb, clock=clock)
    n = claims.CLAIM_BATCH * 2 + 100
    ids = bulk_at(svc, n, clock.now)
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, max_concurrency=claims.CLAIM_BATCH + 10)
    events: list[str] = []
    sched.subscribe(lambda e: events.append(e.kind))
    try:
        started = await sched.tick()
        assert len(started) == n
        assert "run-finished" not in events
        assert svc.store.count_rows(IntentRun.__table__, status="ok") == 0
        await sched.drain()
        assert len(turn.calls) == n
        assert events.index("run-finished") >= events.count("run-started") - 32  # last chunk
    finally:
        await sched.stop()
    assert events.count("run-finished") == n
    runs = svc.list_runs(limit=10_000)
    assert Counter(r.intent_id for r in runs if r.status == "ok") == Counter(ids)
    assert {i.status for i in svc.list_intents()} == {"done"}


async def test_a_long_burst_still_records_outcomes_that_waited_too_long(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """The backlog is bounded: outcomes older than PENDING_MAX_AGE go in the next step."""
    from goalsui.scheduler import loop

    monkeypatch.setattr(loop, "PENDING_MAX_AGE", 0.0)
    svc = make_service(empty_kb, clock=clock)
    n = claims.CLAIM_BATCH * 2 + 100
    bulk_at(svc, n, clock.now)
    sched = Scheduler(svc, clock=clock, turn=FakeTurn(), max_concurrency=claims.CLAIM_BATCH + 10)
    events: list[str] = []
    sched.subscribe(lambda e: events.append(e.kind))
    try:
        assert len(await sched.tick()) == n
        assert 0 < events.count("run-finished") < n  # some recorded during the burst
        await sched.drain()
    finally:
        await sched.stop()
    assert events.count("run-finished") == n
    assert svc.store.count_rows(IntentRun.__table__, status="ok") == n


async def test_a_tick_records_a_few_waiting_outcomes_with_its_claim_but_not_a_backlog(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """Up to FOLD_FIRST_MAX waiting outcomes share the next claim's transaction; a bigger
    backlog (a burst's) would hold up that claim, so it is left to the writer."""
    from goalsui.scheduler import loop

    monkeypatch.setattr(loop, "WRITE_BATCH_DELAY", 60.0)  # the writer stays out of the way
    svc = make_service(empty_kb, clock=clock)
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, max_concurrency=1000)
    events: list[tuple[str, str]] = []
    sched.subscribe(lambda e: events.append((e.kind, e.title)))

    def ok() -> int:
        return int(svc.store.count_rows(IntentRun.__table__, status="ok") or 0)

    async def ended(calls: int) -> None:
        while len(turn.calls) < calls:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # their outcomes are waiting now

    try:
        big = loop.FOLD_FIRST_MAX + 20
        bulk_at(svc, big, clock.now, prefix="burst")
        assert len(await sched.tick()) == big
        await ended(big)
        assert ok() == 0
        bulk_at(svc, 1, clock.now, prefix="after-burst")
        assert len(await sched.tick()) == 1
        assert ok() == 0  # the backlog was not written ahead of that claim
        await sched.drain()
        assert ok() == big + 1

        bulk_at(svc, 5, clock.now, prefix="few")
        assert len(await sched.tick()) == 5
        await ended(big + 6)
        bulk_at(svc, 1, clock.now, prefix="after-few")
        assert len(await sched.tick()) == 1
        assert ok() == big + 6  # the five went in with that claim
        await sched.drain()
        assert ok() == big + 7
    finally:
        await sched.stop()


async def test_outcomes_wait_while_a_claimed_turn_waits_for_its_start(
    empty_kb, make_service, clock: FakeClock
):
    """A turn claimed ahead (due within the lookahead) starts before anything is written:
    the outcome of a turn that already ended waits for it."""
    svc = make_service(empty_kb, clock=clock)
    bulk_at(svc, 1, clock.now, prefix="now")
    bulk_at(svc, 1, clock.now + timedelta(seconds=0.3), prefix="soon")
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, lookahead_seconds=0.5)

    def ok() -> int:
        return int(svc.store.count_rows(IntentRun.__table__, status="ok") or 0)

    try:
        assert len(await sched.tick()) == 2
        while not turn.calls:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.1)  # twenty writer batch delays
        assert [c.intent.title for c in turn.calls] == ["now0"]
        assert ok() == 0
        await sched.drain()
        assert [c.intent.title for c in turn.calls] == ["now0", "soon0"]
        assert ok() == 2
    finally:
        await sched.stop()


def test_racing_threads_claim_disjoint_sets(db_url, empty_kb, make_service, clock: FakeClock):
    svc = make_service(empty_kb, db_url, clock=clock)
    ids = bulk_at(svc, 400, clock.now)
    got: dict[str, list[int]] = {}
    barrier = threading.Barrier(4)

    def claimer(owner: str) -> None:
        engine = make_service(empty_kb, db_url, clock=clock).store.engine
        mine: list[int] = []
        barrier.wait()
        while True:
            res = claims.claim_due(
                engine,
                owner=owner,
                now=clock.now,
                lease_until=clock.now + timedelta(seconds=30),
                limit=25,
                decide=lambda row: decide_claim(row, clock.now),
            )
            if not res.fired:
                break
            mine.extend(item.intent["id"] for item in res.fired)
        got[owner] = mine

    threads = [threading.Thread(target=claimer, args=(f"t{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    claimed = [i for mine in got.values() for i in mine]
    assert sorted(claimed) == sorted(ids)  # every row once, no duplicates
    owners = {i.id: i.lease_owner for i in svc.list_intents()}
    for owner, mine in got.items():
        assert all(owners[i] == owner for i in mine)
    runs = svc.running_runs()
    assert len(runs) == 400 and all(r.owner == owners[r.intent_id] for r in runs)


async def test_recovery_and_completion_cas_on_each_engine(
    db_url, empty_kb, make_service, clock: FakeClock
):
    svc = make_service(empty_kb, db_url, clock=clock)
    (intent_id,) = bulk_at(svc, 1, clock.now)
    turn = FakeTurn()
    gate = turn.gates[intent_id] = asyncio.Event()
    a = Scheduler(svc, clock=clock, turn=turn, owner="a", lease_seconds=10)
    b = Scheduler(
        make_service(empty_kb, db_url, clock=clock), clock=clock, turn=FakeTurn(), owner="b"
    )
    try:
        (run_id,) = await a.tick()
        clock.advance(11)
        rec = await b.recover()
        assert [row["id"] for row, _, _ in rec.interrupted] == [intent_id]
        gate.set()
        await a.drain()
        assert svc.get_run(run_id).status == "interrupted"
        row = svc.get_intent(intent_id)
        assert (row.status, row.pending_trigger, row.lease_owner) == ("active", "retry", None)
    finally:
        await a.stop()
        await b.stop()
