"""The sample nightshift, its clock advanced through a night: the morning report lists every run.

The workers run their real read-only tick scripts; the reporter is the builtin
``report`` runner. The loop below does what the scheduler does for each due worker
(claim -> run record -> run_turn -> record the outcome -> next occurrence), with the
FakeClock jumping from one occurrence to the next.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from goalsui.domain.triggers import next_due
from goalsui.runners.base import TurnOutcome
from goalsui.runners.turn import run_turn
from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun

GOAL = "nightshift-979afc6e"
WORKERS = ("commander", "scout", "librarian", "auditor", "gardener")


def start_run(service: Service, intent: Intent) -> IntentRun:
    now = service.now()
    with service.store.write() as s:
        run = IntentRun(
            intent_id=intent.id,
            attempt=1,
            trigger="schedule",
            status="running",
            planned_at=intent.next_run_at,
            started_at=now,
        )
        s.add(run)
        s.flush()
    return run


def finish(
    service: Service, intent: Intent, run: IntentRun, outcome: TurnOutcome, took: float
) -> None:
    with service.store.write() as s:
        row = s.get(IntentRun, run.id)
        assert row is not None
        row.status = outcome.status
        row.reason = outcome.reason
        row.exit_code = outcome.exit_code
        row.output_tail = outcome.output_tail
        row.output_path = str(outcome.output_path) if outcome.output_path else None
        row.finished_at = run.started_at + timedelta(seconds=took)
        s.add(row)
        fresh = s.get(Intent, intent.id)
        assert fresh is not None
        fresh.fires += 1
        fresh.next_run_at = next_due(fresh.kind, fresh.schedule, fresh.timezone, service.now())
        s.add(fresh)


async def drive_night(service: Service, clock, until: datetime) -> list[tuple[str, int, str]]:
    done: list[tuple[str, int, str]] = []
    while True:
        due = [
            i for i in service.intents.list(goal_id=GOAL) if i.status == "active" and i.next_run_at
        ]
        intent = min(due, key=lambda i: i.next_run_at)
        if intent.next_run_at > until:
            return done
        clock.set(intent.next_run_at + timedelta(seconds=2))  # a little late, as in life
        run = start_run(service, intent)
        outcome = await run_turn(service, intent, run, cancel=asyncio.Event())
        finish(service, intent, run, outcome, took=1.5)
        done.append((intent.worker or "", run.id or 0, outcome.status))


async def test_sample_nightshift_night_produces_the_morning_report(service: Service, clock) -> None:
    # The FakeClock starts at 2026-12-02 12:00 UTC; the night ends at 07:30 Berlin.
    morning = datetime(2026, 12, 3, 6, 31, tzinfo=UTC)
    done = await drive_night(service, clock, morning)
    workers = [w for w, _, _ in done]
    assert workers == [*WORKERS, "reporter"]
    statuses = {w: s for w, _, s in done}
    assert all(statuses[w] in ("ok", "silent") for w in WORKERS), statuses
    assert statuses["reporter"] == "ok"

    goal_dir = service.kb.goal_dir(GOAL)
    report = goal_dir / "reports" / "2026-12-02.md"  # the night that started on the 2nd
    text = report.read_text()
    assert text.startswith("# Nightshift report, night of 2026-12-02\n")
    timeline = text[text.index("## Timeline") : text.index("## Findings")]
    for worker, run_id, status in done[:-1]:
        row = next(
            line for line in timeline.splitlines() if line.startswith(f"| {worker} | {run_id} |")
        )
        assert f"| {status} |" in row or f"| {status}:" in row
        # every row names its source: the run and the outbox file or the log line
        if status == "ok":
            assert re.search(
                rf"run {run_id}, workers/{worker}/outbox/\d{{8}}T\d{{6}}Z-{run_id}\.md", row
            ), row
            assert (goal_dir / re.search(r"workers/\S+\.md", row).group(0)).is_file()
        else:
            assert re.search(rf"run {run_id}, log/2026-12-0[23]\.md:\d+", row), row
    assert f"{len(WORKERS)} runs:" in text
    assert "No earlier snapshot" in text
    assert (goal_dir / "reports" / ".snapshots" / "2026-12-02" / "state.yaml").is_file()
    # The reporter's summary is delivered like any result: outbox, goal log, goal message.
    reporter_run = done[-1][1]
    summary = next(m for m in service.threads.messages(goal_id=GOAL) if m.run_id == reporter_run)
    assert summary.provenance == "Came back about: Nightshift / reporter"
    assert summary.content.startswith("Nightshift report, night of 2026-12-02: 5 runs:")
    assert "Report: reports/2026-12-02.md" in summary.content
    assert list((goal_dir / "workers" / "reporter" / "outbox").glob(f"*-{reporter_run}.md"))


async def test_second_night_diffs_state_against_the_first_snapshot(service: Service, clock) -> None:
    await drive_night(service, clock, datetime(2026, 12, 3, 6, 31, tzinfo=UTC))
    goal_dir: Path = service.kb.goal_dir(GOAL)
    state = goal_dir / "state.yaml"
    state.write_text(state.read_text().replace('night_of: "2026-11-30"', 'night_of: "2026-12-03"'))
    done = await drive_night(service, clock, datetime(2026, 12, 4, 6, 31, tzinfo=UTC))
    assert [w for w, _, _ in done] == [*WORKERS, "reporter"]
    text = (goal_dir / "reports" / "2026-12-03.md").read_text()
    changes = text[text.index("## Changes to state.yaml and protocol.md") :]
    assert "since the report of the night of 2026-12-02" in changes
    assert '-night_of: "2026-11-30"' in changes
    assert '+night_of: "2026-12-03"' in changes
    assert "`protocol.md`: unchanged" in changes
    # Only the second night's runs are in the second report.
    first_night_ids = {
        r.id
        for r in service.runs.list(limit=100)
        if r.started_at < datetime(2026, 12, 3, 11, tzinfo=UTC)
    }
    timeline = text[text.index("## Timeline") : text.index("## Findings")]
    for run_id in first_night_ids:
        assert f"| {run_id} |" not in timeline


async def test_night_through_the_scheduler_tick(service: Service, clock) -> None:
    """The same night driven by the real scheduler (claim, run record, run_turn, completion)."""
    from goalsui.scheduler.loop import Scheduler

    for goal in service.goals.list():
        if goal.goal_id != GOAL:
            service.goals.pause(goal.goal_id)
    scheduler = Scheduler(service, clock=clock, grace_seconds=1)
    morning = datetime(2026, 12, 3, 6, 31, tzinfo=UTC)
    try:
        while True:
            due = [
                i.next_run_at
                for i in service.intents.list(goal_id=GOAL)
                if i.status == "active" and i.next_run_at
            ]
            if min(due) > morning:
                break
            clock.set(min(due) + timedelta(seconds=2))
            assert await scheduler.tick()
            await scheduler.drain(timeout=60)
    finally:
        await scheduler.stop()
    runs = sorted(
        (r for i in service.intents.list(goal_id=GOAL) for r in service.runs.list(intent_id=i.id)),
        key=lambda r: r.started_at,
    )
    names = {i.id: i.worker for i in service.intents.list(goal_id=GOAL)}
    assert [names[r.intent_id] for r in runs] == [*WORKERS, "reporter"]
    assert all(r.status in ("ok", "silent") for r in runs), [
        (names[r.intent_id], r.status, r.reason) for r in runs
    ]
    text = (service.kb.goal_dir(GOAL) / "reports" / "2026-12-02.md").read_text()
    timeline = text[text.index("## Timeline") : text.index("## Findings")]
    for run in runs[:-1]:
        assert re.search(
            rf"^\| {names[run.intent_id]} \| {run.id} \| schedule \| .* \| {run.status} \| run {run.id}, ",
            timeline,
            re.M,
        )
