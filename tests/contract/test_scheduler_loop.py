"""The timed loop with the real clock: waking, polling for other processes, leases, start/stop."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from goalsui.domain.timeutil import utcnow
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler import Scheduler, SchedulerEvent, tuning
from goalsui.service import Service
from tests.base_kit import run_cli
from tests.unit.test_scheduler_rules import FakeTurn


async def until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    """Wait (bounded) until ``predicate()`` holds; fail if it never does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
def svc(empty_kb: Path, make_service: Callable[..., Service]) -> Service:
    return make_service(empty_kb)


async def test_start_state_and_an_in_process_change_fires(svc):
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn)
    events: list[SchedulerEvent] = []
    s.subscribe(events.append)
    assert s.state == "stopped"
    await s.start()
    try:
        assert s.state == "running"
        with pytest.raises(RuntimeError):
            await s.start()
        intent = svc.intents.create(
            title="now", instruction="x", kind="at", schedule=utcnow().isoformat()
        )
        await until(
            lambda: any(e.kind == "run-finished" and e.intent_id == intent.id for e in events)
        )
        assert svc.intents.get(intent.id).status == "done"
        assert [e.kind for e in events if e.intent_id == intent.id] == [
            "run-started",
            "run-finished",
        ]
    finally:
        await s.stop()
    assert s.state == "stopped"


async def test_the_alarm_fires_a_future_intent_not_before_its_time(svc):
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn)
    await s.start()
    try:
        due = utcnow() + timedelta(milliseconds=400)
        intent = svc.intents.create(
            title="soon", instruction="x", kind="at", schedule=due.isoformat()
        )
        await until(lambda: svc.intents.get(intent.id).status == "done")
        (run,) = svc.runs.list(intent_id=intent.id)
        assert run.status == "ok" and run.planned_at == due and run.started_at >= due
    finally:
        await s.stop()


async def test_a_change_made_by_another_process_is_seen(db_url, empty_kb, make_service, tmp_path):
    svc = make_service(empty_kb, db_url)
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn)
    await s.start()
    try:
        cli = run_cli(
            "intent", "add", "--title", "from the CLI", "--instruction", "x",
            "--at", utcnow().isoformat(), "--json",
            kb=empty_kb, db=db_url, state=tmp_path / "state", timeout=60,
        )  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        await until(lambda: len(turn.calls) == 1)
        assert turn.calls[0].intent.title == "from the CLI"
    finally:
        await s.stop()


async def test_cancel_by_another_service_stops_a_running_turn(svc, empty_kb, make_service):
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn, poll_interval=0.2)
    intent = svc.intents.create(title="long", instruction="x", kind="cron", schedule="* * * * *")
    turn.gates[intent.id] = asyncio.Event()  # runs until stopped
    svc.intents.run_now(intent.id)
    await s.start()
    try:
        await until(lambda: len(s.running) == 1)
        (run_id,) = s.running
        other = make_service(empty_kb)  # not subscribed: only the database tells
        other.intents.cancel(intent.id)
        await until(lambda: svc.runs.get(run_id).status != "running")
        assert svc.runs.get(run_id).status == "cancelled"
        assert svc.intents.get(intent.id).status == "cancelled"
    finally:
        await s.stop()


async def test_start_recovers_a_dead_owners_rows_and_leases_are_renewed(
    svc, empty_kb, make_service
):
    dead_turn = FakeTurn()
    intent = svc.intents.create(
        title="orphan", instruction="x", kind="at", schedule=utcnow().isoformat()
    )
    dead_turn.gates[intent.id] = asyncio.Event()
    dead = Scheduler(svc, turn=dead_turn, owner="dead", lease_seconds=0.5)
    (run_id,) = await dead.tick()  # claimed, never renewed: as if the process died
    await asyncio.sleep(0.6)  # let the lease lapse (this is setup, not an assertion)
    turn = FakeTurn()
    alive = Scheduler(make_service(empty_kb), turn=turn, owner="alive", lease_seconds=0.6)
    long = svc.intents.create(
        title="long", instruction="x", kind="at", schedule=utcnow().isoformat()
    )
    turn.gates[long.id] = asyncio.Event()
    await alive.start()
    try:
        assert svc.runs.get(run_id).status == "interrupted"
        await until(lambda: len(turn.calls) >= 1)
        lease = svc.intents.get(long.id).lease_until
        await until(lambda: svc.intents.get(long.id).lease_until > lease)  # renewed
        assert svc.intents.get(long.id).status == "firing"
        await until(
            lambda: any(c.intent.id == intent.id and c.run.trigger == "retry" for c in turn.calls)
        )
    finally:
        await alive.stop(grace=0.5)
        dead_turn.gates[intent.id].set()
        await dead.stop()
    runs = {r.id: r for r in svc.runs.list(limit=100)}
    assert runs[run_id].status == "interrupted"
    assert svc.intents.get(long.id).status == "active"  # interrupted by the stop: retry planned


async def test_a_burst_runs_with_collection_paused_and_resumes_it_once_recorded(svc, monkeypatch):
    from goalsui.scheduler import heap

    monkeypatch.setattr(heap, "PAUSE_AT", 5)
    seen: list[bool] = []

    async def turn(service, intent, run, *, event=None, cancel=None):
        seen.append(gc.isenabled())
        return TurnOutcome("ok")

    gc.enable()
    due = utcnow() + timedelta(milliseconds=300)
    ids = [
        svc.intents.create(title=f"b{k}", instruction="x", kind="at", schedule=due.isoformat()).id
        for k in range(8)
    ]
    s = Scheduler(svc, turn=turn)
    await s.start()
    try:
        await until(lambda: all(svc.intents.get(i).status == "done" for i in ids))
        await until(gc.isenabled)
    finally:
        await s.stop()
    assert seen == [False] * 8  # every turn of the burst ran with collection paused
    assert gc.isenabled()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority exists on Linux only")
async def test_the_database_thread_runs_at_a_lower_priority_than_the_loop(svc):
    s = Scheduler(svc, turn=FakeTurn())
    await s.start()
    try:

        def nice() -> int:
            return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

        loop_nice = nice()
        db_nice = await s.rt.db(nice)
        assert db_nice == min(19, loop_nice + tuning.DB_THREAD_NICE)
        assert nice() == loop_nice  # the loop thread (and the process) keep theirs
    finally:
        await s.stop()


async def test_a_stop_that_waits_for_turns_is_not_reported_as_a_failure(svc, monkeypatch):
    """Stopping shuts the alarm clock down before the running turns have ended; the alarm's
    watch waking meanwhile is part of the stop, not a dead alarm."""
    from goalsui.scheduler import alarm

    monkeypatch.setattr(alarm, "IDLE_CAP", 0.05)  # the watch looks every 50 ms

    async def slow_to_stop(service, intent, run, *, event=None, cancel):
        await cancel.wait()
        await asyncio.sleep(0.4)  # a turn that takes its time to end
        return TurnOutcome("cancelled", reason="stopped on request")

    s = Scheduler(svc, turn=slow_to_stop)
    events: list[SchedulerEvent] = []
    s.subscribe(events.append)
    await s.start()
    intent = svc.intents.create(
        title="t", instruction="x", kind="at", schedule=utcnow().isoformat()
    )
    await until(lambda: any(e.kind == "run-started" and e.intent_id == intent.id for e in events))
    await s.stop(grace=2.0)
    assert s.state == "stopped", s.rt.error
    # the turn ended within the grace and is recorded as interrupted by the stop
    assert [r.status for r in svc.runs.list(intent_id=intent.id)] == ["interrupted"]
