"""Claims on SQLite and PostgreSQL: several schedulers on one database never fire an occurrence twice."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from goalsui.scheduler import Scheduler
from goalsui.service import Service
from goalsui.store import claims
from goalsui.store.claims import SqlClaimBackend
from goalsui.store.models import Intent, IntentRun
from goalsui.store.tables import table_of
from tests.base_kit import FakeClock
from tests.claims_kit import claims_for
from tests.unit.test_scheduler_rules import FakeTurn


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
        return [r.id for r in rows]


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
    runs = a_svc.runs.list(limit=10_000)
    assert Counter(r.intent_id for r in runs if r.status == "ok") == Counter(ids)
    assert {r.status for r in runs} == {"ok"}
    assert {i.status for i in a_svc.intents.list()} == {"done"}


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
        assert svc.store.count_rows(table_of(IntentRun), status="ok") == 0
        await sched.drain()
        assert len(turn.calls) == n
        assert events.index("run-finished") >= events.count("run-started") - 32  # last chunk
    finally:
        await sched.stop()
    assert events.count("run-finished") == n
    runs = svc.runs.list(limit=10_000)
    assert Counter(r.intent_id for r in runs if r.status == "ok") == Counter(ids)
    assert {i.status for i in svc.intents.list()} == {"done"}


async def test_a_long_burst_still_records_outcomes_that_waited_too_long(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """The backlog is bounded: outcomes older than PENDING_MAX_AGE go in the next step."""
    from goalsui.scheduler import tuning

    monkeypatch.setattr(tuning, "PENDING_MAX_AGE", 0.0)
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
    assert svc.store.count_rows(table_of(IntentRun), status="ok") == n


async def test_a_tick_folds_waiting_outcomes_into_its_claim_unless_a_burst_is_behind(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """The first step of a tick records the outcomes waiting in its claim's transaction.
    In a burst (due rows were left unclaimed) it takes at most FOLD_FIRST_MAX of them:
    a bigger backlog would hold up the claims, so it is left to the writer."""
    from goalsui.scheduler import tuning
    from goalsui.scheduler.writer import OutcomeWriter

    async def no_writer(self: OutcomeWriter) -> None:  # only the steps record outcomes here
        await asyncio.Event().wait()

    monkeypatch.setattr(OutcomeWriter, "run", no_writer)
    folded: list[int] = []
    acquire = SqlClaimBackend.acquire  # the SQLite backend's too

    def spy(self: SqlClaimBackend, *args: Any, **kwargs: Any) -> Any:
        folded.append(len(kwargs.get("completions") or ()))
        return acquire(self, *args, **kwargs)

    monkeypatch.setattr(SqlClaimBackend, "acquire", spy)
    svc = make_service(empty_kb, clock=clock)
    turn = FakeTurn()
    big = tuning.FOLD_FIRST_MAX + 20
    sched = Scheduler(svc, clock=clock, turn=turn, max_concurrency=big)

    async def ended(calls: int) -> None:
        while len(turn.calls) < calls:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # their outcomes are waiting now

    try:
        # A burst: one more row due than there are slots.
        bulk_at(svc, big + 1, clock.now, prefix="burst")
        assert len(await sched.tick()) == big
        await ended(big)
        folded.clear()
        assert len(await sched.tick()) == 1  # the row left behind ...
        assert folded == [0]  # ... claimed without the backlog of 120
        await sched.drain()

        # Keeping up (nothing was left due): the next tick takes them all.
        bulk_at(svc, big, clock.now, prefix="stream")
        assert len(await sched.tick()) == big
        await ended(2 * big + 1)
        bulk_at(svc, 1, clock.now, prefix="next")
        folded.clear()
        assert len(await sched.tick()) == 1
        assert folded == [big]
        await sched.drain()
    finally:
        await sched.stop()
    assert svc.store.count_rows(table_of(IntentRun), status="ok") == 2 * big + 2


async def test_a_turn_claimed_for_later_does_not_hold_up_outcomes(
    empty_kb, make_service, clock: FakeClock
):
    """A turn claimed ahead (due within the lookahead) waits for its start time; the
    outcome of a turn that ended meanwhile is recorded without waiting for it."""
    svc = make_service(empty_kb, clock=clock)
    bulk_at(svc, 1, clock.now, prefix="now")
    bulk_at(svc, 1, clock.now + timedelta(seconds=0.5), prefix="soon")
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, lookahead_seconds=1.0)

    def ok() -> int:
        return int(svc.store.count_rows(table_of(IntentRun), status="ok") or 0)

    try:
        assert len(await sched.tick()) == 2
        for _ in range(200):  # up to 0.2 s: the writer's batch delay is 5 ms
            if ok():
                break
            await asyncio.sleep(0.001)
        assert [c.intent.title for c in turn.calls] == ["now0"]  # "soon" still waits
        assert ok() == 1
        await sched.drain()
        assert [c.intent.title for c in turn.calls] == ["now0", "soon0"]
        assert ok() == 2
    finally:
        await sched.stop()


def test_a_step_counts_the_burst_due_with_the_soonest(
    db_url, empty_kb, make_service, clock: FakeClock
):
    """When nothing more is claimable, a step says how many rows fall due within the
    burst window of the soonest (counted up to the limit); the poll's read says the same."""
    svc = make_service(empty_kb, db_url, clock=clock)
    soonest = clock.now + timedelta(seconds=10)
    bulk_at(svc, 30, soonest, prefix="burst")
    bulk_at(svc, 5, soonest + timedelta(seconds=0.2), prefix="close")
    bulk_at(svc, 5, soonest + timedelta(seconds=1), prefix="later")
    engine, window = svc.store.engine, timedelta(seconds=0.25)

    def probe(limit: int, by: datetime = soonest) -> claims.BurstProbe:
        return claims.BurstProbe(window, limit, by)

    def step(**kw: Any) -> claims.ClaimResult:
        result = claims_for(engine).acquire(
            owner="me",
            now=clock.now,
            lease_until=clock.now + timedelta(seconds=30),
            limit=10,
            **kw,
        )
        return result

    def counted(**kw: Any) -> int:
        result = step(**kw)
        assert not result.fired  # nothing is due yet
        return result.burst

    assert counted(burst=probe(100)) == 35
    assert counted(burst=probe(20)) == 20
    assert counted() == 0  # not asked
    assert claims_for(engine).soonest_burst(probe(100)) == (soonest, 35)
    assert claims_for(engine).soonest_burst(None) == (soonest, 0)
    # A burst further off than the probe reaches is not counted (yet).
    assert counted(burst=probe(100, by=soonest - timedelta(seconds=1))) == 0
    assert claims_for(engine).soonest_burst(probe(100, soonest - timedelta(seconds=1))) == (
        soonest,
        0,
    )
    # Rows claimable by due_by are claimed, not counted (a step that claims says "full").
    result = step(due_by=soonest, burst=probe(100))
    assert len(result.fired) == 10 and result.full and result.burst == 0


async def test_a_burst_the_free_slots_can_take_is_claimed_before_it_is_due(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """Many rows due at once, beyond the lookahead: the scheduler claims them early
    enough for the claims to be done when they are due (here 10 ms a row: 600 rows, 6 s
    ahead, due in 3 s: slack for a loaded machine, where claiming 600 rows once took longer
    than the 0.6 s this test used to allow); each turn still starts at its due time."""
    from goalsui.scheduler import tuning

    monkeypatch.setattr(tuning, "CLAIM_AHEAD_PER_ROW", 0.01)
    monkeypatch.setattr(tuning, "MAX_AHEAD", 7.0)
    svc = make_service(empty_kb, clock=clock)
    due = clock.now + timedelta(seconds=3)
    ids = bulk_at(svc, 600, due)
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, max_concurrency=1000)
    try:
        assert await sched.tick() == []  # due beyond the lookahead: the tick sees the burst
        assert len(await sched.tick()) == 600  # ... and the next one claims it all
        assert turn.calls == []  # claimed, not started: they wait for their due time
        assert {i.status for i in svc.intents.list()} == {"firing"}
        await sched.drain()
    finally:
        await sched.stop()
    assert sorted(c.intent.id for c in turn.calls) == sorted(ids)
    runs = svc.runs.list(limit=1000)
    assert {r.status for r in runs} == {"ok"} and {r.started_at for r in runs} == {due}


async def test_turns_claimed_ahead_share_a_start_gate_that_one_cancel_cannot_close(
    empty_kb, make_service, clock: FakeClock
):
    """Turns claimed ahead for one due time wait on one gate: cancelling one of them
    cancels that turn only; the others start on time and end ok."""
    svc = make_service(empty_kb, clock=clock)
    due = clock.now + timedelta(seconds=0.3)
    bulk_at(svc, 3, due)
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, lookahead_seconds=1.0)
    try:
        runs = await sched.tick()
        assert len(runs) == 3 and turn.calls == []
        await asyncio.sleep(0.01)  # the three wait at their gate
        sched.launcher.tasks[runs[0]].cancel()
        await sched.drain()
    finally:
        await sched.stop()
    assert len(turn.calls) == 2
    statuses = {r.id: r.status for r in svc.runs.list(limit=10)}
    assert statuses[runs[1]] == statuses[runs[2]] == "ok"
    assert statuses[runs[0]] == "interrupted"  # a cancelled task: its turn never ran


async def test_stopping_does_not_wait_for_turns_claimed_ahead_to_fall_due(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """A burst claimed 5 s ahead, then the scheduler stops: its turns are recorded as
    interrupted at once (never started), not when they fall due (their grace, 10 s,
    would have let them wait that long)."""
    from goalsui.scheduler import tuning

    monkeypatch.setattr(tuning, "CLAIM_AHEAD_PER_ROW", 0.1)
    monkeypatch.setattr(tuning, "MAX_AHEAD", 30.0)
    svc = make_service(empty_kb, clock=clock)
    bulk_at(svc, 60, clock.now + timedelta(seconds=5))
    turn = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=turn, max_concurrency=100, grace_seconds=10)
    await sched.tick()
    assert len(await sched.tick()) == 60
    started = asyncio.get_running_loop().time()
    await sched.stop()
    assert asyncio.get_running_loop().time() - started < 4  # the turns were due in 5 s
    assert turn.calls == []
    runs = svc.runs.list(limit=100)
    assert len(runs) == 60 and {r.status for r in runs} == {"interrupted"}


async def test_a_burst_is_claimed_early_only_as_far_as_the_slots_and_lookahead_allow(
    empty_kb, make_service, clock: FakeClock, monkeypatch
):
    """Eight free slots take eight rows, not a burst; a scheduler told not to look ahead
    (lookahead 0) does not claim a burst ahead either."""
    from goalsui.scheduler import tuning

    monkeypatch.setattr(tuning, "CLAIM_AHEAD_PER_ROW", 0.002)
    svc = make_service(empty_kb, clock=clock)
    bulk_at(svc, 600, clock.now + timedelta(seconds=0.6))
    for sched in (
        Scheduler(svc, clock=clock, turn=FakeTurn(), max_concurrency=8),
        Scheduler(svc, clock=clock, turn=FakeTurn(), max_concurrency=1000, lookahead_seconds=0),
    ):
        try:
            assert await sched.tick() == []
            assert await sched.tick() == []
        finally:
            await sched.stop()
    assert {i.status for i in svc.intents.list()} == {"active"}
    # Their looks at the database do not even count the burst.
    for slots, lookahead in ((8, 0.25), (1000, 0)):
        sched = Scheduler(svc, max_concurrency=slots, lookahead_seconds=lookahead)
        assert sched.claimer.burst_probe(clock.now) is None
    assert Scheduler(svc, max_concurrency=1000).claimer.burst_probe(clock.now) is not None


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
            res = claims_for(engine).acquire(
                owner=owner,
                now=clock.now,
                lease_until=clock.now + timedelta(seconds=30),
                limit=25,
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
    owners = {i.id: i.lease_owner for i in svc.intents.list()}
    for owner, mine in got.items():
        assert all(owners[i] == owner for i in mine)
    runs = svc.runs.running()
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
        assert svc.runs.get(run_id).status == "interrupted"
        row = svc.intents.get(intent_id)
        assert (row.status, row.pending_trigger, row.lease_owner) == ("active", "retry", None)
    finally:
        await a.stop()
        await b.stop()
