"""Goals through the service: the KB index (sync_kb), goal pause/resume/complete, run-now."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

from goalsui.errors import KBError, NotFound
from goalsui.service import Service
from goalsui.store.models import Goal

GOAL = "nightshift-979afc6e"
SCOUT_NEXT = datetime(2026, 12, 2, 19, 30, tzinfo=UTC)  # 20:30 Berlin on the clock's day


def worker_file(kb: Path, worker: str, goal: str = GOAL) -> Path:
    return kb / goal / "workers" / worker / "definition.yaml"


def test_index_is_built_from_the_kb(service: Service, sample_kb: Path) -> None:
    goals = {g.goal_id: g for g in service.goals.list()}
    assert set(goals) == {p.parent.name for p in sample_kb.glob("*/definition.yaml")}
    night = goals[GOAL]
    assert night.name == "Nightshift" and night.status == "active" and night.error is None
    assert night.path == str(sample_kb.resolve() / GOAL)
    workers = {w.name: w for w in night.workers}
    assert {"commander", "scout", "reporter"} <= set(workers)
    assert workers["scout"].next_run_at == SCOUT_NEXT
    assert workers["scout"].timezone == "Europe/Berlin"
    assert service.goals.get(GOAL).workers == night.workers
    with pytest.raises(NotFound):
        service.goals.get("no-such-goal")


def test_worker_definition_edit_replans(service: Service, sample_kb: Path) -> None:
    path = worker_file(sample_kb, "scout")
    path.write_text(path.read_text().replace('cron: "30 20 * * *"', 'cron: "45 22 * * *"'))
    assert service.index.sync() == []
    intent = service.workers.intent(GOAL, "scout")
    assert intent.schedule == "45 22 * * *"
    assert intent.next_run_at == datetime(2026, 12, 2, 21, 45, tzinfo=UTC)
    # a sync without changes keeps the plan
    service.index.sync()
    assert service.workers.intent(GOAL, "scout").next_run_at == intent.next_run_at


def test_broken_worker_keeps_its_last_good_intent(service: Service, sample_kb: Path) -> None:
    path = worker_file(sample_kb, "scout")
    good_text = path.read_text()
    good = service.workers.intent(GOAL, "scout")
    path.write_text(good_text.replace("timezone: Europe/Berlin", "timezone: [Europe/Berlin"))
    problems = service.index.sync()
    assert [(p.path, p.line) for p in problems] == [(f"{GOAL}/workers/scout/definition.yaml", 7)]
    kept = service.workers.intent(GOAL, "scout")
    assert (kept.id, kept.status, kept.schedule, kept.next_run_at) == (
        good.id,
        "active",
        good.schedule,
        good.next_run_at,
    )
    view = service.goals.get(GOAL)
    assert "scout/definition.yaml:7" in view.error
    assert "scout" in {w.name for w in view.workers}
    path.write_text(good_text)
    assert service.index.sync() == []
    assert service.goals.get(GOAL).error is None


def test_removed_worker_cancels_its_intent_and_can_return(
    service: Service, sample_kb: Path
) -> None:
    folder = sample_kb / GOAL / "workers" / "scout"
    saved = sample_kb.parent / "scout-saved"
    shutil.move(folder, saved)
    service.index.sync()
    gone = service.workers.intent(GOAL, "scout")
    assert gone.status == "cancelled" and "removed" in gone.last_error
    assert "scout" not in {w.name for w in service.goals.get(GOAL).workers}
    shutil.move(saved, folder)
    service.index.sync()
    back = service.workers.intent(GOAL, "scout")
    assert back.id == gone.id and back.status == "active" and back.next_run_at == SCOUT_NEXT


def test_removed_goal_leaves_the_index(service: Service, sample_kb: Path) -> None:
    ids = {w.intent_id for w in service.goals.get(GOAL).workers}
    saved = sample_kb.parent / "saved-goal"
    shutil.move(sample_kb / GOAL, saved)
    service.index.sync()
    assert GOAL not in {g.goal_id for g in service.goals.list()}
    with pytest.raises(NotFound):
        service.goals.get(GOAL)
    live = {i.id for i in service.intents.list(include_ended=False)}
    assert not ids & live  # none of its schedules can fire
    shutil.move(saved, sample_kb / GOAL)
    service.index.sync()
    assert {w.status for w in service.goals.get(GOAL).workers} == {"active"}


def test_a_sync_of_an_unchanged_kb_changes_no_record(
    service: Service, sample_kb: Path, clock
) -> None:
    """Every CLI command syncs the KB: an unchanged KB must not look like a change to the
    consoles (their change token) nor rewrite the goal rows."""
    before = service.overview.change_token()
    stamps = goal_stamps(service)
    clock.advance(60)
    assert service.index.sync() == []
    assert service.overview.change_token() == before
    path = sample_kb / GOAL / "definition.yaml"
    path.write_text(path.read_text().replace("name: Nightshift", "name: Nightshift two"))
    clock.advance(60)
    service.index.sync()
    assert service.goals.get(GOAL).name == "Nightshift two"
    assert service.overview.change_token() != before
    after = goal_stamps(service)
    assert after.pop(GOAL) > stamps.pop(GOAL)
    assert after == stamps  # the other goals were left alone


def goal_stamps(service: Service) -> dict[str, datetime]:
    with service.store.read() as s:
        return {g.goal_id: g.updated_at for g in s.exec(select(Goal)).all()}


def test_goal_status_edited_by_hand_pauses_and_resumes_workers(
    service: Service, sample_kb: Path
) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    text = path.read_text()
    path.write_text(text.replace("status: active", "status: paused"))
    service.index.sync()
    assert {w.status for w in service.goals.get(GOAL).workers} == {"paused"}
    path.write_text(text)
    service.index.sync()
    assert {w.status for w in service.goals.get(GOAL).workers} == {"active"}


def test_pause_resume_complete_goal(service: Service, sample_kb: Path, clock) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    comments = [line for line in path.read_text().splitlines() if line.startswith("#")]
    scout = service.workers.intent(GOAL, "scout")
    service.intents.pause(scout.id)  # paused on its own by the operator
    paused = service.goals.pause(GOAL)
    assert paused.status == "paused"
    assert {w.status for w in paused.workers} == {"paused"}
    assert "status: paused" in path.read_text()
    assert [line for line in path.read_text().splitlines() if line.startswith("#")] == comments
    clock.advance(days=2)
    resumed = service.goals.resume(GOAL)
    assert resumed.status == "active"
    workers = {w.name: w for w in resumed.workers}
    assert workers["scout"].status == "paused"  # the operator's own pause is kept
    assert {w.status for n, w in workers.items() if n != "scout"} == {"active"}
    commander = workers["commander"]
    assert commander.next_run_at == datetime(2026, 12, 4, 19, 0, tzinfo=UTC)  # planned from now
    completed = service.goals.complete(GOAL)
    assert completed.status == "completed"
    assert {w.status for w in completed.workers} == {"paused"}
    assert "status: completed" in path.read_text()
    assert service.goals.resume(GOAL).status == "active"


def test_pause_goal_refuses_a_broken_definition(service: Service, sample_kb: Path) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    path.write_text("goal_id: nightshift-979afc6e\nname: [broken\n")
    with pytest.raises(KBError):
        service.goals.pause(GOAL)
    assert path.read_text() == "goal_id: nightshift-979afc6e\nname: [broken\n"
    assert {w.status for w in service.goals.get(GOAL).workers} == {"active"}


def test_run_worker_now(service: Service, clock) -> None:
    intent = service.workers.run_now(GOAL, "commander")
    assert intent.next_run_at == clock.now and intent.pending_trigger == "run-now"
    assert service.workers.intent(GOAL, "commander").next_run_at == clock.now
    with pytest.raises(NotFound):
        service.workers.run_now(GOAL, "nobody")
    with pytest.raises(NotFound):
        service.workers.run_now("no-such-goal", "commander")


def test_delete_goal(service: Service, sample_kb: Path) -> None:
    ids = {w.intent_id for w in service.goals.get(GOAL).workers}
    service.goals.delete(GOAL)
    assert not (sample_kb / GOAL).exists()
    assert not [p for p in sample_kb.iterdir() if p.name.startswith(".trash-")]
    assert GOAL not in {g.goal_id for g in service.goals.list()}
    assert not ids & {i.id for i in service.intents.list(include_ended=False)}
    with pytest.raises(NotFound):
        service.goals.delete(GOAL)
