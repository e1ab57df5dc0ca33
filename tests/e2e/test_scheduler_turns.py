"""The scheduler with the REAL runner (goalsui.runners.turn.run_turn) and real subprocesses."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.scheduler import Scheduler, SchedulerEvent
from goalsui.service import Service
from tests.daemon_kit import alive

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def script(name: str, *args: str) -> dict:
    return {"command": [sys.executable, str(SCRIPTS / name), *args]}


@pytest.fixture
def svc(empty_kb: Path, make_service: Callable[..., Service], clock) -> Service:
    return make_service(empty_kb, clock=clock)


@pytest.fixture
async def sched(svc, clock):
    s = Scheduler(svc, clock=clock, grace_seconds=1)  # the default turn: the real run_turn
    yield s
    await s.stop(grace=1)


async def test_a_real_turn_captures_output_and_delivers_it(svc, sched, clock):
    thread = svc.threads.create("results")
    intent = svc.intents.create(
        title="report back",
        instruction="say something",
        kind="at",
        schedule=clock.now.isoformat(),
        thread_id=thread.id,
        runner=script("sched_ok.py"),
    )
    events: list[SchedulerEvent] = []
    sched.subscribe(events.append)
    (run_id,) = await sched.tick()
    await sched.drain(timeout=60)
    run = svc.runs.get(run_id)
    assert (run.status, run.exit_code) == ("ok", 0)
    assert f"done for run {run_id}" in (run.output_tail or "")
    assert run.output_path and Path(run.output_path).is_file()
    assert f"done for run {run_id}" in svc.runs.output(run_id)
    posted = [m for m in svc.threads.messages(thread.id) if m.run_id == run_id]
    assert posted and "second line of the result" in posted[0].content
    assert svc.intents.get(intent.id).status == "done"
    assert [e.kind for e in events] == ["run-started", "run-finished"]


async def test_a_non_zero_exit_is_a_failed_run_that_retries(svc, sched, clock):
    intent = svc.intents.create(
        title="breaks",
        instruction="x",
        kind="at",
        schedule=clock.now.isoformat(),
        runner=script("sched_fail.py"),
    )
    (run_id,) = await sched.tick()
    await sched.drain(timeout=60)
    run = svc.runs.get(run_id)
    assert (run.status, run.exit_code) == ("failed", 3)
    assert "something broke" in (run.output_tail or "")
    row = svc.intents.get(intent.id)
    assert (row.status, row.consecutive_failures, row.pending_trigger) == ("active", 1, "retry")
    assert row.last_error == run.reason


async def test_a_timeout_kills_the_process_and_is_recorded(svc, sched, clock, tmp_path):
    piddir = tmp_path / "pids"
    piddir.mkdir()
    intent = svc.intents.create(
        title="slow",
        instruction="x",
        kind="at",
        schedule=clock.now.isoformat(),
        runner=script("sched_sleep.py", str(piddir), "60"),
        timeout="1s",
    )
    (run_id,) = await sched.tick()
    await sched.drain(timeout=60)
    run = svc.runs.get(run_id)
    assert run.status == "timeout"
    (pid,) = [int(p.read_text()) for p in piddir.glob("*.pid")]
    assert not alive(pid)
    assert svc.intents.get(intent.id).consecutive_failures == 1


async def test_cancel_stops_the_running_process(svc, sched, clock, tmp_path):
    piddir = tmp_path / "pids"
    piddir.mkdir()
    intent = svc.intents.create(
        title="long",
        instruction="x",
        kind="cron",
        schedule="* * * * *",
        runner=script("sched_sleep.py", str(piddir), "60"),
    )
    svc.intents.run_now(intent.id)
    (run_id,) = await sched.tick()
    while not list(piddir.glob("*.pid")):  # the process is up once it wrote its pid
        await sched.leases.watch()
        await asyncio.sleep(0.02)
    (pid,) = [int(p.read_text()) for p in piddir.glob("*.pid")]
    svc.intents.cancel(intent.id)
    await sched.leases.watch()  # notices the cancel: SIGTERM to the process group
    await sched.drain(timeout=30)
    run = svc.runs.get(run_id)
    assert run.status == "cancelled"
    assert not alive(pid)
    assert svc.intents.get(intent.id).status == "cancelled"


async def test_a_night_of_the_sample_nightshift_ends_in_a_morning_report(
    sample_kb, make_service, clock
):
    clock.set(datetime(2026, 12, 2, 12, 0, tzinfo=UTC))
    svc = make_service(sample_kb, clock=clock)
    night = next(g for g in svc.goals.list() if g.goal_id.startswith("nightshift"))
    for goal in svc.goals.list():
        if goal.goal_id != night.goal_id and goal.status == "active":
            svc.goals.pause(goal.goal_id)  # only the nightshift runs tonight
    s = Scheduler(svc, clock=clock, grace_seconds=1)
    morning = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)  # 08:00 in Berlin
    fired: list[int] = []
    try:
        while True:
            due = [i.next_run_at for i in svc.intents.list(status="active") if i.next_run_at]
            if not due or min(due) > morning:
                break
            clock.set(min(due))
            fired += await s.tick()
            await s.drain(timeout=120)
    finally:
        await s.stop()
    runs = {r.id: r for r in svc.runs.list(limit=100)}
    workers = {i.id: i.worker for i in svc.intents.list(goal_id=night.goal_id)}
    assert sorted(workers[runs[r].intent_id] for r in fired) == sorted(
        w.name for w in night.workers
    )
    report = Path(night.path) / "reports" / "2026-12-02.md"  # the night began on the 2nd
    text = report.read_text(encoding="utf-8")
    for run_id in fired:
        run = runs[run_id]
        if workers[run.intent_id] == "reporter":
            continue  # the report is its own output
        assert f"| {workers[run.intent_id]} | {run_id} |" in text
        assert run.status in ("ok", "silent")
