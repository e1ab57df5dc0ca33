"""The scheduling rules, driven tick by tick with a fake clock and a scripted fake turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from goalsui.domain.cron import next_occurrence
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler import Scheduler, SchedulerEvent
from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun
from tests.base_kit import FakeClock


@dataclass
class Call:
    intent: Intent
    run: IntentRun
    event: Any


@dataclass
class FakeTurn:
    """A turn that records its calls; per intent: scripted statuses and an optional gate."""

    calls: list[Call] = field(default_factory=list)
    script: dict[int, list[str]] = field(default_factory=dict)
    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, service, intent, run, *, event=None, cancel):
        self.calls.append(Call(intent, run, event))
        self.started.set()
        gate = self.gates.get(intent.id)
        if gate is not None:
            waiters = [asyncio.ensure_future(gate.wait()), asyncio.ensure_future(cancel.wait())]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()
            if cancel.is_set():
                return TurnOutcome("cancelled", reason="stopped on request")
        statuses = self.script.get(intent.id) or []
        status = statuses.pop(0) if statuses else "ok"
        return TurnOutcome(
            status, reason=None if status in ("ok", "silent") else f"{status} on purpose"
        )

    def triggers(self, intent_id: int) -> list[str]:
        return [c.run.trigger for c in self.calls if c.intent.id == intent_id]


def write_config(kb: Path, text: str) -> None:
    (kb / "goalsui.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def svc(empty_kb: Path, make_service: Callable[..., Service], clock: FakeClock) -> Service:
    return make_service(empty_kb, clock=clock)


@pytest.fixture
def fake() -> FakeTurn:
    return FakeTurn()


@pytest.fixture
async def sched(svc: Service, clock: FakeClock, fake: FakeTurn):
    s = Scheduler(svc, clock=clock, turn=fake, owner="test-owner")
    yield s
    await s.stop(grace=1)


def runs_of(svc: Service, intent_id: int) -> list[IntentRun]:
    return sorted(svc.runs.list(intent_id=intent_id, limit=1000), key=lambda r: r.id or 0)


async def fire(s: Scheduler) -> list[int]:
    started = await s.tick()
    await s.drain(timeout=10)
    return started


# -- lifecycle -------------------------------------------------------------------------------
async def test_at_fires_once_then_done(svc, sched, fake, clock):
    due = clock.now + timedelta(minutes=5)
    intent = svc.intents.create(
        title="once", instruction="do it", kind="at", schedule=due.isoformat()
    )
    assert await fire(sched) == []
    clock.set(due)
    started = await fire(sched)
    assert len(started) == 1
    clock.advance(3600)
    assert await fire(sched) == []
    runs = runs_of(svc, intent.id)
    assert [(r.status, r.trigger, r.planned_at, r.owner) for r in runs] == [
        ("ok", "schedule", due, "test-owner")
    ]
    assert runs[0].started_at == due and runs[0].finished_at == due
    after = svc.intents.get(intent.id)
    assert (after.status, after.next_run_at, after.fires, after.lease_owner) == (
        "done",
        None,
        1,
        None,
    )
    assert fake.calls[0].run.id == runs[0].id and fake.calls[0].run.status == "running"
    actions = [(j.actor, j.action) for j in svc.journal.recent()]
    assert ("scheduler", "run started") in actions and ("scheduler", "run finished") in actions


async def test_cron_computes_the_next_occurrence_across_dst(svc, sched, clock):
    # 02:30 Berlin does not exist on 2026-03-29: it fires once at 03:00 local (01:00 UTC).
    clock.set(datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    intent = svc.intents.create(
        title="nightly",
        instruction="x",
        kind="cron",
        schedule="30 2 * * *",
        timezone="Europe/Berlin",
    )
    first = svc.intents.get(intent.id).next_run_at
    assert first == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    clock.set(first)
    assert len(await fire(sched)) == 1
    nxt = svc.intents.get(intent.id).next_run_at
    assert nxt == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # 02:30 CEST
    assert nxt == next_occurrence("30 2 * * *", "Europe/Berlin", first)


async def test_hourly_cron_fires_once_per_real_hour_through_fall_back(svc, sched, clock):
    clock.set(datetime(2026, 11, 1, 4, 30, tzinfo=UTC))  # 00:30 EDT in New York
    intent = svc.intents.create(
        title="hourly",
        instruction="x",
        kind="cron",
        schedule="0 * * * *",
        timezone="America/New_York",
    )
    fired = []
    for _ in range(4):
        due = svc.intents.get(intent.id).next_run_at
        clock.set(due)
        await fire(sched)
        fired.append(due)
    # 01:00 EDT, 01:00 EST (the repeated hour, one real hour later), 02:00 EST, 03:00 EST
    assert fired == [datetime(2026, 11, 1, h, 0, tzinfo=UTC) for h in (5, 6, 7, 8)]
    assert len(runs_of(svc, intent.id)) == 4


async def test_max_fires_ends_the_intent_as_done(svc, sched, clock):
    intent = svc.intents.create(
        title="twice", instruction="x", kind="cron", schedule="* * * * *", max_fires=2
    )
    for _ in range(3):
        clock.advance(60)
        await fire(sched)
    after = svc.intents.get(intent.id)
    assert (after.status, after.fires, after.next_run_at) == ("done", 2, None)
    assert [r.status for r in runs_of(svc, intent.id)] == ["ok", "ok"]


async def test_expires_at_ends_the_intent(svc, sched, clock):
    expires = clock.now + timedelta(seconds=150)
    a = svc.intents.create(
        title="short", instruction="x", kind="cron", schedule="* * * * *", expires_at=expires
    )
    clock.advance(60)
    await fire(sched)
    assert svc.intents.get(a.id).status == "active"
    clock.advance(60)
    await fire(sched)  # the next occurrence (+180 s) is past the expiry: done now
    after = svc.intents.get(a.id)
    assert (after.status, after.next_run_at) == ("done", None)
    assert len(runs_of(svc, a.id)) == 2


async def test_an_intent_that_expires_while_waiting_ends_without_a_run(svc, sched, clock):
    b = svc.intents.create(
        title="later",
        instruction="x",
        kind="cron",
        schedule="0 0 1 1 *",
        expires_at=clock.now + timedelta(hours=1),
    )
    clock.advance(7200)
    await sched.sweep()
    assert svc.intents.get(b.id).status == "done"
    assert runs_of(svc, b.id) == []


async def test_event_intent_fires_with_the_event_then_waits(svc, sched, fake, clock):
    intent = svc.intents.create(
        title="on push",
        instruction="look",
        kind="event",
        event_source="ci",
        event_filter={"branch": "main"},
    )
    assert svc.intents.get(intent.id).next_run_at is None
    res = svc.events.emit("ci", {"branch": "main", "sha": "abc"}, "d-1")
    assert res.fired == [intent.id]
    assert len(await fire(sched)) == 1
    (call,) = fake.calls
    assert call.run.trigger == "event" and call.run.event_id == res.event_id
    assert call.event is not None and call.event.payload == {"branch": "main", "sha": "abc"}
    after = svc.intents.get(intent.id)
    assert (after.status, after.next_run_at, after.pending_event_id) == ("active", None, None)
    run = runs_of(svc, intent.id)[0]
    assert (run.status, run.event_id) == ("ok", res.event_id)


async def test_run_now_fires_once_and_keeps_the_schedule(svc, sched, fake, clock):
    intent = svc.intents.create(title="daily", instruction="x", kind="cron", schedule="0 6 * * *")
    planned = svc.intents.get(intent.id).next_run_at
    svc.intents.run_now(intent.id)
    assert len(await fire(sched)) == 1
    assert fake.triggers(intent.id) == ["run-now"]
    assert svc.intents.get(intent.id).next_run_at == planned


# -- retry and auto-disable -------------------------------------------------------------------
async def test_retry_backoff_then_auto_disable(svc, sched, fake, clock):
    intent = svc.intents.create(title="flaky", instruction="x", kind="cron", schedule="0 6 * * *")
    fake.script[intent.id] = ["failed", "timeout", "failed", "failed", "failed"]
    svc.intents.run_now(intent.id)
    delays = []
    for n in range(1, 6):
        await fire(sched)
        row = svc.intents.get(intent.id)
        assert row.consecutive_failures == n
        if n < 5:
            assert row.status == "active" and row.pending_trigger == "retry"
            delays.append((row.next_run_at - clock.now).total_seconds())
            clock.set(row.next_run_at)
    assert delays == [2, 4, 8, 16]
    row = svc.intents.get(intent.id)
    assert (row.status, row.next_run_at) == ("failed", None)
    assert row.last_error == "failed on purpose"
    assert fake.triggers(intent.id) == ["run-now", "retry", "retry", "retry", "retry"]
    assert [r.status for r in runs_of(svc, intent.id)] == [
        "failed",
        "timeout",
        "failed",
        "failed",
        "failed",
    ]
    clock.advance(3600)
    assert await fire(sched) == []  # auto-disabled: no more fires
    assert any(j.action == "intent auto-disabled" for j in svc.journal.recent())


async def test_success_resets_the_failure_count(svc, sched, fake, clock):
    intent = svc.intents.create(
        title="once bad", instruction="x", kind="cron", schedule="*/10 * * * *"
    )
    fake.script[intent.id] = ["failed", "ok"]
    clock.set(svc.intents.get(intent.id).next_run_at)
    await fire(sched)
    row = svc.intents.get(intent.id)
    assert row.consecutive_failures == 1 and row.last_error == "failed on purpose"
    clock.set(row.next_run_at)
    await fire(sched)
    row = svc.intents.get(intent.id)
    assert (row.consecutive_failures, row.last_error, row.status) == (0, None, "active")
    assert row.next_run_at == datetime(2026, 12, 2, 12, 20, tzinfo=UTC)
    assert fake.triggers(intent.id) == ["schedule", "retry"]


async def test_retry_policy_comes_from_the_kb_config(empty_kb, make_service, clock, fake):
    write_config(
        empty_kb, "retry:\n  base_seconds: 3\n  cap_seconds: 5\n  max_consecutive_failures: 3\n"
    )
    svc = make_service(empty_kb, clock=clock)
    s = Scheduler(svc, clock=clock, turn=fake)
    try:
        intent = svc.intents.create(
            title="f", instruction="x", kind="at", schedule=clock.now.isoformat()
        )
        fake.script[intent.id] = ["failed"] * 3
        delays = []
        for _ in range(3):
            await fire(s)
            row = svc.intents.get(intent.id)
            if row.next_run_at:
                delays.append((row.next_run_at - clock.now).total_seconds())
                clock.set(row.next_run_at)
        assert delays == [3, 5]
        assert svc.intents.get(intent.id).status == "failed"
    finally:
        await s.stop()


async def test_a_turn_that_raises_is_a_failed_run(svc, sched, clock):
    async def broken(service, intent, run, *, event=None, cancel):
        raise RuntimeError("boom")

    sched.launcher.set_turn(broken)
    intent = svc.intents.create(
        title="x", instruction="x", kind="at", schedule=clock.now.isoformat()
    )
    await fire(sched)
    (run,) = runs_of(svc, intent.id)
    assert run.status == "failed" and "RuntimeError: boom" in run.reason
    assert svc.intents.get(intent.id).consecutive_failures == 1


async def test_failures_raise_an_alert(svc, sched, fake, clock):
    events: list[SchedulerEvent] = []
    sched.subscribe(events.append)
    thread = svc.threads.create("ops")
    intent = svc.intents.create(
        title="alerting",
        instruction="x",
        kind="at",
        schedule=clock.now.isoformat(),
        thread_id=thread.id,
    )
    fake.script[intent.id] = ["failed", "failed"]
    await fire(sched)
    assert not [e for e in events if e.kind == "alert"]  # alert_after defaults to 2
    clock.set(svc.intents.get(intent.id).next_run_at)
    await fire(sched)
    alerts = [e for e in events if e.kind == "alert"]
    assert len(alerts) == 1 and alerts[0].intent_id == intent.id
    assert any("failed 2 times" in m.content for m in svc.threads.messages(thread.id))


# -- overlap -------------------------------------------------------------------------------------
async def test_a_due_time_during_a_run_is_skipped_overlap_and_the_schedule_advances(
    svc, sched, fake, clock
):
    intent = svc.intents.create(title="slow", instruction="x", kind="cron", schedule="* * * * *")
    gate = fake.gates[intent.id] = asyncio.Event()
    clock.advance(60)  # 12:01
    assert len(await sched.tick()) == 1
    assert svc.intents.get(intent.id).status == "firing"
    clock.advance(60)  # 12:02 passes while the run lives
    assert await sched.tick() == []
    clock.advance(150)  # 12:03 and 12:04 pass: one more overlap record, then 12:05
    await sched.tick()
    assert len(sched.running) == 1
    gate.set()
    await sched.drain()
    runs = runs_of(svc, intent.id)
    assert [(r.status, r.reason) for r in runs] == [
        ("ok", None),
        ("skipped", "overlap"),
        ("skipped", "overlap"),
    ]
    assert runs[1].planned_at == datetime(2026, 12, 2, 12, 2, tzinfo=UTC)
    assert runs[2].planned_at == datetime(2026, 12, 2, 12, 3, tzinfo=UTC)
    after = svc.intents.get(intent.id)
    assert (after.status, after.next_run_at) == ("active", datetime(2026, 12, 2, 12, 5, tzinfo=UTC))
    clock.set(after.next_run_at)
    assert len(await fire(sched)) == 1  # exactly one fire: no storm


async def test_an_occurrence_passed_at_completion_is_recorded_overlap(svc, sched, fake, clock):
    intent = svc.intents.create(title="slow", instruction="x", kind="cron", schedule="* * * * *")
    gate = fake.gates[intent.id] = asyncio.Event()
    clock.advance(60)
    await sched.tick()
    clock.advance(90)  # 12:02 passes with no tick in between
    gate.set()
    await sched.drain()
    runs = runs_of(svc, intent.id)
    assert [(r.status, r.reason, r.planned_at.minute) for r in runs] == [
        ("ok", None, 1),
        ("skipped", "overlap", 2),
    ]
    assert svc.intents.get(intent.id).next_run_at == datetime(2026, 12, 2, 12, 3, tzinfo=UTC)


async def test_run_now_during_a_run_is_skipped_overlap(svc, sched, fake, clock):
    intent = svc.intents.create(
        title="slow", instruction="x", kind="at", schedule=clock.now.isoformat()
    )
    gate = fake.gates[intent.id] = asyncio.Event()
    await sched.tick()
    svc.intents.run_now(intent.id)
    gate.set()
    await sched.drain()
    assert sorted((r.status, r.trigger) for r in runs_of(svc, intent.id)) == [
        ("ok", "schedule"),
        ("skipped", "run-now"),
    ]


# -- pause / cancel while running ---------------------------------------------------------------------
async def test_pause_during_a_run_leaves_the_intent_paused(svc, sched, fake, clock):
    intent = svc.intents.create(title="p", instruction="x", kind="cron", schedule="* * * * *")
    gate = fake.gates[intent.id] = asyncio.Event()
    clock.advance(60)
    await sched.tick()
    svc.intents.pause(intent.id)
    gate.set()
    await sched.drain()
    after = svc.intents.get(intent.id)
    assert (after.status, after.pending_trigger, after.lease_owner) == ("paused", None, None)
    assert runs_of(svc, intent.id)[0].status == "ok"
    clock.advance(600)
    assert await fire(sched) == []
    svc.intents.resume(intent.id)  # plans from now: one fire at the next minute, no storm
    assert svc.intents.get(intent.id).next_run_at == datetime(2026, 12, 2, 12, 12, tzinfo=UTC)


async def test_cancel_during_a_run_stops_it_and_records_cancelled(svc, sched, fake, clock):
    intent = svc.intents.create(title="c", instruction="x", kind="cron", schedule="* * * * *")
    fake.gates[intent.id] = asyncio.Event()  # never opened: only the cancel ends the turn
    clock.advance(60)
    (run_id,) = await sched.tick()
    svc.intents.cancel(intent.id)
    await sched.leases.watch()  # the cheap poll notices the cancel and stops the turn
    await sched.drain(timeout=10)
    run = svc.runs.get(run_id)
    assert (run.status, run.reason) == ("cancelled", "stopped on request")
    after = svc.intents.get(intent.id)
    assert (after.status, after.next_run_at, after.lease_owner) == ("cancelled", None, None)


async def test_a_cancel_that_lands_during_completion_wins(svc, sched, fake, clock):
    intent = svc.intents.create(title="c", instruction="x", kind="cron", schedule="* * * * *")
    gate = fake.gates[intent.id] = asyncio.Event()
    clock.advance(60)
    (run_id,) = await sched.tick()
    svc.intents.cancel(intent.id)  # not noticed before the turn ends by itself
    gate.set()
    await sched.drain()
    assert svc.runs.get(run_id).status == "ok"  # it did finish
    assert svc.intents.get(intent.id).status == "cancelled"  # and the cancel stands


async def test_stop_interrupts_running_turns_and_records_them(svc, clock, fake):
    s = Scheduler(svc, clock=clock, turn=fake)
    intent = svc.intents.create(
        title="long", instruction="x", kind="at", schedule=clock.now.isoformat()
    )
    fake.gates[intent.id] = asyncio.Event()
    (run_id,) = await s.tick()
    await s.stop(grace=1)
    assert s.state == "stopped"
    run = svc.runs.get(run_id)
    assert (run.status, run.reason) == (
        "interrupted",
        "interrupted: the scheduler stopped (shutdown)",
    )
    row = svc.intents.get(intent.id)
    assert (row.status, row.pending_trigger, row.consecutive_failures) == ("active", "retry", 1)


# -- heartbeats ------------------------------------------------------------------------------------
async def test_quiet_hours_skip_without_calling_the_runner(svc, sched, fake, clock):
    clock.set(datetime(2026, 12, 2, 21, 0, tzinfo=UTC))  # 22:00 in Berlin
    intent = svc.intents.create(
        title="hb",
        instruction="",
        kind="heartbeat",
        schedule="30m",
        checklist="- [ ] look at CI",
        active_hours={"start": "08:00", "end": "22:00", "timezone": "Europe/Berlin"},
    )
    clock.advance(1800)  # 22:30 Berlin: quiet
    await fire(sched)
    assert fake.calls == []
    (run,) = runs_of(svc, intent.id)
    assert (run.status, run.reason) == ("skipped", "quiet-hours")
    row = svc.intents.get(intent.id)
    assert (row.status, row.next_run_at, row.consecutive_failures, row.fires) == (
        "active",
        clock.now + timedelta(minutes=30),
        0,
        0,
    )
    clock.set(datetime(2026, 12, 3, 7, 0, tzinfo=UTC))  # 08:00 Berlin: active again
    await fire(sched)
    assert len(fake.calls) == 1


async def test_empty_checklist_costs_zero_runner_calls(svc, sched, fake, clock):
    intent = svc.intents.create(
        title="hb",
        instruction="",
        kind="heartbeat",
        schedule="30m",
        checklist="# Things to check\n\n- [ ]\n- [ ]   \n<!-- nothing yet -->\n",
    )
    for _ in range(3):
        clock.advance(1800)
        await fire(sched)
    assert fake.calls == []
    assert [(r.status, r.reason) for r in runs_of(svc, intent.id)] == [
        ("skipped", "empty-checklist")
    ] * 3


async def test_worker_heartbeat_reads_its_prompt_as_the_checklist(
    svc, sched, fake, clock, empty_kb
):
    from goalsui.kb.layout import WorkerSeed

    view = svc.goals.create(
        "Watch",
        "watch things",
        [WorkerSeed("pulse", {"schedule": {"every": "30m"}}, prompt="# Pulse\n\n- [ ]\n")],
    )
    intent = svc.workers.intent(view.goal_id, "pulse")
    assert intent.kind == "heartbeat"
    clock.advance(1800)
    await fire(sched)
    assert fake.calls == [] and runs_of(svc, intent.id)[0].reason == "empty-checklist"
    (empty_kb / view.goal_id / "workers" / "pulse" / "prompt.md").write_text(
        "- [ ] check the queue\n"
    )
    clock.advance(1800)
    await fire(sched)
    assert len(fake.calls) == 1


# -- catch-up ------------------------------------------------------------------------------------------
async def test_catch_up_fires_missed_occurrences_inside_the_limit_once(svc, sched, fake, clock):
    intent = svc.intents.create(title="hourly", instruction="x", kind="cron", schedule="0 * * * *")
    clock.set(datetime(2026, 12, 2, 15, 30, tzinfo=UTC))  # 13:00, 14:00, 15:00 were missed
    await sched.catch_up()
    assert len(await fire(sched)) == 1
    (run,) = runs_of(svc, intent.id)
    assert (run.trigger, run.status, run.planned_at) == (
        "catch-up",
        "ok",
        datetime(2026, 12, 2, 15, 0, tzinfo=UTC),
    )
    assert svc.intents.get(intent.id).next_run_at == datetime(2026, 12, 2, 16, 0, tzinfo=UTC)


async def test_catch_up_records_occurrences_past_the_limit_as_missed(
    empty_kb, make_service, clock, fake
):
    write_config(empty_kb, "catch_up_limit: 2h\n")
    svc = make_service(empty_kb, clock=clock)
    s = Scheduler(svc, clock=clock, turn=fake)
    try:
        hourly = svc.intents.create(
            title="hourly", instruction="x", kind="cron", schedule="0 * * * *"
        )
        old_at = svc.intents.create(
            title="at", instruction="x", kind="at", schedule="2026-12-02T12:30:00Z"
        )
        clock.set(datetime(2026, 12, 2, 17, 30, tzinfo=UTC))  # 13..17 missed; limit 15:30
        await s.catch_up()
        assert len(await fire(s)) == 1
        runs = runs_of(svc, hourly.id)
        missed = [r for r in runs if r.status == "missed"]
        assert [r.planned_at.hour for r in missed] == [13, 14, 15]
        assert all(r.trigger == "catch-up" for r in missed)
        (fired,) = [r for r in runs if r.status == "ok"]
        assert (fired.trigger, fired.planned_at.hour) == ("catch-up", 17)
        assert svc.intents.get(hourly.id).next_run_at == datetime(2026, 12, 2, 18, 0, tzinfo=UTC)
        assert [r.status for r in runs_of(svc, old_at.id)] == ["missed"]
        assert svc.intents.get(old_at.id).status == "done"
    finally:
        await s.stop()


async def test_catch_up_of_a_heartbeat_keeps_its_cadence(svc, sched, fake, clock):
    intent = svc.intents.create(title="hb", instruction="look", kind="heartbeat", schedule="30m")
    clock.advance(hours=3, minutes=10)  # 12:30 .. 15:00 missed (6 ticks)
    await sched.catch_up()
    await fire(sched)
    (run,) = runs_of(svc, intent.id)
    assert (run.trigger, run.planned_at) == ("catch-up", datetime(2026, 12, 2, 15, 0, tzinfo=UTC))
    assert svc.intents.get(intent.id).next_run_at == datetime(2026, 12, 2, 15, 30, tzinfo=UTC)


# -- recovery ------------------------------------------------------------------------------------------
async def test_recovery_interrupts_a_dead_owners_run_and_retries(
    svc, clock, fake, make_service, empty_kb
):
    dead = Scheduler(svc, clock=clock, turn=fake, owner="dead", lease_seconds=30)
    intent = svc.intents.create(
        title="r", instruction="x", kind="at", schedule=clock.now.isoformat()
    )
    gate = fake.gates[intent.id] = asyncio.Event()
    (run_id,) = await dead.tick()
    other = make_service(empty_kb, clock=clock)  # another process's view of the same database
    alive = Scheduler(other, clock=clock, turn=FakeTurn(), owner="alive")
    try:
        await alive.recover()
        assert svc.runs.get(run_id).status == "running"  # the lease has not expired yet
        clock.advance(31)
        await alive.recover()
        run = svc.runs.get(run_id)
        assert run.status == "interrupted" and "lease expired" in run.reason
        row = svc.intents.get(intent.id)
        assert (row.status, row.consecutive_failures, row.pending_trigger) == ("active", 1, "retry")
        assert row.next_run_at == clock.now + timedelta(seconds=2)
        clock.advance(2)
        assert len(await fire(alive)) == 1
        assert svc.intents.get(intent.id).status == "done"
        # The "dead" scheduler wakes up and finishes: its late outcome changes nothing.
        gate.set()
        await dead.drain()
        assert svc.runs.get(run_id).status == "interrupted"
        assert svc.intents.get(intent.id).status == "done"
        assert sorted(r.status for r in runs_of(svc, intent.id)) == ["interrupted", "ok"]
    finally:
        await dead.stop()
        await alive.stop()


async def test_a_lost_lease_stops_the_turn(svc, clock, fake, make_service, empty_kb):
    slow = Scheduler(svc, clock=clock, turn=fake, owner="slow", lease_seconds=30)
    intent = svc.intents.create(title="r", instruction="x", kind="cron", schedule="0 * * * *")
    fake.gates[intent.id] = asyncio.Event()
    clock.set(svc.intents.get(intent.id).next_run_at)
    (run_id,) = await slow.tick()
    other = Scheduler(
        make_service(empty_kb, clock=clock), clock=clock, turn=FakeTurn(), owner="other"
    )
    try:
        clock.advance(31)
        await other.recover()
        await slow.leases.renew()  # finds the row no longer ours: stops its turn
        await slow.drain(timeout=10)
        assert svc.runs.get(run_id).status == "interrupted"
        assert len(runs_of(svc, intent.id)) == 1
    finally:
        await slow.stop()
        await other.stop()


# -- events to the host -----------------------------------------------------------------------------
async def test_subscribers_see_started_and_finished(svc, sched, clock):
    events: list[SchedulerEvent] = []
    unsubscribe = sched.subscribe(events.append)
    intent = svc.intents.create(
        title="seen", instruction="x", kind="at", schedule=clock.now.isoformat()
    )
    (run_id,) = await fire(sched)
    assert [(e.kind, e.intent_id, e.run_id, e.status) for e in events] == [
        ("run-started", intent.id, run_id, "running"),
        ("run-finished", intent.id, run_id, "ok"),
    ]
    unsubscribe()
    svc.intents.create(title="unseen", instruction="x", kind="at", schedule=clock.now.isoformat())
    await fire(sched)
    assert len(events) == 2


async def test_max_concurrency_limits_a_tick(svc, clock, fake):
    s = Scheduler(svc, clock=clock, turn=fake, max_concurrency=3)
    try:
        ids = [
            svc.intents.create(
                title=f"i{n}", instruction="x", kind="at", schedule=clock.now.isoformat()
            ).id
            for n in range(7)
        ]
        gate = asyncio.Event()
        for i in ids:
            fake.gates[i] = gate
        assert len(await s.tick()) == 3
        assert len(s.running) == 3 and await s.tick() == []
        gate.set()
        await s.drain()
        assert len(await fire(s)) == 3
        assert len(await fire(s)) == 1
        assert all(svc.intents.get(i).status == "done" for i in ids)
    finally:
        await s.stop()


async def test_prune_removes_runs_older_than_30_days(svc, sched, clock):
    intent = svc.intents.create(title="old", instruction="x", kind="cron", schedule="0 * * * *")
    clock.set(svc.intents.get(intent.id).next_run_at)
    (old_run,) = await fire(sched)
    log = svc.runs.log_path(old_run)
    log.write_text("output\n")
    clock.advance(days=31)
    svc.intents.run_now(intent.id)
    (new_run,) = await fire(sched)
    assert await sched.prune() == 1
    assert [r.id for r in runs_of(svc, intent.id)] == [new_run]
    assert not log.exists()


async def test_a_failed_event_run_retries_with_the_same_event(svc, sched, fake, clock):
    intent = svc.intents.create(title="on ci", instruction="look", kind="event", event_source="ci")
    fake.script[intent.id] = ["failed", "ok"]
    res = svc.events.emit("ci", {"n": 1}, "d-1")
    await fire(sched)
    row = svc.intents.get(intent.id)
    assert (row.pending_trigger, row.pending_event_id) == ("retry", res.event_id)
    clock.set(row.next_run_at)
    await fire(sched)
    assert [(c.run.trigger, c.run.event_id, c.event.payload) for c in fake.calls] == [
        ("event", res.event_id, {"n": 1}),
        ("retry", res.event_id, {"n": 1}),
    ]
    row = svc.intents.get(intent.id)
    assert (row.status, row.next_run_at, row.consecutive_failures) == ("active", None, 0)
