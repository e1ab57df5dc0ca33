"""Contract: retry, recovery and catch-up behave the same on SQLite and PostgreSQL
(the scheduler's deterministic tick API with a fake clock and a fake turn)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.base_kit import FakeClock
from tests.unit.test_scheduler_rules import FakeTurn


async def _fire(s: Scheduler) -> list[int]:
    started = await s.tick()
    await s.drain(timeout=30)
    return started


def _runs(svc: Service, intent_id: int) -> list:
    return sorted(svc.runs.list(intent_id=intent_id, limit=1000), key=lambda r: r.id or 0)


async def test_retry_backoff_then_auto_disable(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], clock: FakeClock
) -> None:
    svc = make_service(empty_kb, db_url, clock=clock)
    fake = FakeTurn()
    sched = Scheduler(svc, clock=clock, turn=fake, owner="contract")
    try:
        intent = svc.intents.create(
            title="flaky", instruction="x", kind="cron", schedule="0 6 * * *"
        )
        fake.script[intent.id] = ["failed"] * 5
        svc.intents.run_now(intent.id)
        delays = []
        for n in range(1, 6):
            assert len(await _fire(sched)) == 1
            row = svc.intents.get(intent.id)
            assert row.consecutive_failures == n
            if n < 5:
                assert (row.status, row.pending_trigger) == ("active", "retry")
                delays.append((row.next_run_at - clock.now).total_seconds())
                clock.set(row.next_run_at)
        assert delays == [2, 4, 8, 16]
        row = svc.intents.get(intent.id)
        assert (row.status, row.next_run_at, row.last_error) == (
            "failed",
            None,
            "failed on purpose",
        )
        clock.advance(3600)
        assert await _fire(sched) == []
        assert [r.status for r in _runs(svc, intent.id)] == ["failed"] * 5
    finally:
        await sched.stop(grace=1)


async def test_recovery_of_a_dead_schedulers_run(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], clock: FakeClock
) -> None:
    svc = make_service(empty_kb, db_url, clock=clock)
    other = make_service(empty_kb, db_url, clock=clock)  # its own engine: another process
    fake = FakeTurn()
    dead = Scheduler(svc, clock=clock, turn=fake, owner="dead", lease_seconds=30)
    alive = Scheduler(other, clock=clock, turn=FakeTurn(), owner="alive")
    try:
        intent = svc.intents.create(
            title="r", instruction="x", kind="at", schedule=clock.now.isoformat()
        )
        gate = fake.gates[intent.id] = asyncio.Event()
        (run_id,) = await dead.tick()
        await alive.recover()
        assert svc.runs.get(run_id).status == "running"  # the lease is still valid
        clock.advance(31)
        await alive.recover()
        assert svc.runs.get(run_id).status == "interrupted"
        row = svc.intents.get(intent.id)
        assert (row.status, row.consecutive_failures, row.pending_trigger) == ("active", 1, "retry")
        clock.advance(2)
        assert len(await _fire(alive)) == 1
        assert svc.intents.get(intent.id).status == "done"
        gate.set()  # the "dead" one finishes late: its outcome changes nothing
        await dead.drain(timeout=30)
        assert sorted(r.status for r in _runs(svc, intent.id)) == ["interrupted", "ok"]
        assert svc.intents.get(intent.id).status == "done"
    finally:
        await dead.stop(grace=1)
        await alive.stop(grace=1)


async def test_catch_up_coalesces_inside_the_limit_and_records_older_as_missed(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], clock: FakeClock
) -> None:
    (empty_kb / "goalsui.yaml").write_text("catch_up_limit: 2h\n", encoding="utf-8")
    svc = make_service(empty_kb, db_url, clock=clock)
    sched = Scheduler(svc, clock=clock, turn=FakeTurn(), owner="contract")
    try:
        hourly = svc.intents.create(
            title="hourly", instruction="x", kind="cron", schedule="0 * * * *"
        )
        clock.set(datetime(2026, 12, 2, 17, 30, tzinfo=UTC))  # 13..17 missed; limit 15:30
        await sched.catch_up()
        assert len(await _fire(sched)) == 1
        runs = _runs(svc, hourly.id)
        assert [r.planned_at.hour for r in runs if r.status == "missed"] == [13, 14, 15]
        (fired,) = [r for r in runs if r.status == "ok"]
        assert (fired.trigger, fired.planned_at) == (
            "catch-up",
            datetime(2026, 12, 2, 17, 0, tzinfo=UTC),
        )
        assert svc.intents.get(hourly.id).next_run_at == datetime(2026, 12, 2, 18, 0, tzinfo=UTC)
        clock.advance(timedelta(minutes=1).total_seconds())
        assert await _fire(sched) == []  # nothing else due: no storm
    finally:
        await sched.stop(grace=1)
