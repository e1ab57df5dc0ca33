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
    goals = {g.goal_id: g for g in service.list_goals()}
    assert set(goals) == {p.parent.name for p in sample_kb.glob("*/definition.yaml")}
    night = goals[GOAL]
    assert night.name == "Nightshift" and night.status == "active" and night.error is None
    assert night.path == str(sample_kb.resolve() / GOAL)
    workers = {w.name: w for w in night.workers}
    assert {"commander", "scout", "reporter"} <= set(workers)
    assert workers["scout"].next_run_at == SCOUT_NEXT
    assert workers["scout"].timezone == "Europe/Berlin"
    assert service.get_goal(GOAL).workers == night.workers
    with pytest.raises(NotFound):
        service.get_goal("no-such-goal")


def test_worker_definition_edit_replans(service: Service, sample_kb: Path) -> None:
    path = worker_file(sample_kb, "scout")
    path.write_text(path.read_text().replace('cron: "30 20 * * *"', 'cron: "45 22 * * *"'))
    assert service.sync_kb() == []
    intent = service.worker_intent(GOAL, "scout")
    assert intent.schedule == "45 22 * * *"
    assert intent.next_run_at == datetime(2026, 12, 2, 21, 45, tzinfo=UTC)
    # a sync without changes keeps the plan
    service.sync_kb()
    assert service.worker_intent(GOAL, "scout").next_run_at == intent.next_run_at


def test_broken_worker_keeps_its_last_good_intent(service: Service, sample_kb: Path) -> None:
    path = worker_file(sample_kb, "scout")
    good_text = path.read_text()
    good = service.worker_intent(GOAL, "scout")
    path.write_text(good_text.replace("timezone: Europe/Berlin", "timezone: [Europe/Berlin"))
    problems = service.sync_kb()
    assert [(p.path, p.line) for p in problems] == [(f"{GOAL}/workers/scout/definition.yaml", 7)]
    kept = service.worker_intent(GOAL, "scout")
    assert (kept.id, kept.status, kept.schedule, kept.next_run_at) == (
        good.id,
        "active",
        good.schedule,
        good.next_run_at,
    )
    view = service.get_goal(GOAL)
    assert "scout/definition.yaml:7" in view.error
    assert "scout" in {w.name for w in view.workers}
    path.write_text(good_text)
    assert service.sync_kb() == []
    assert service.get_goal(GOAL).error is None


def test_removed_worker_cancels_its_intent_and_can_return(
    service: Service, sample_kb: Path
) -> None:
    folder = sample_kb / GOAL / "workers" / "scout"
    saved = sample_kb.parent / "scout-saved"
    shutil.move(folder, saved)
    service.sync_kb()
    gone = service.worker_intent(GOAL, "scout")
    assert gone.status == "cancelled" and "removed" in gone.last_error
    assert "scout" not in {w.name for w in service.get_goal(GOAL).workers}
    shutil.move(saved, folder)
    service.sync_kb()
    back = service.worker_intent(GOAL, "scout")
    assert back.id == gone.id and back.status == "active" and back.next_run_at == SCOUT_NEXT


def test_removed_goal_leaves_the_index(service: Service, sample_kb: Path) -> None:
    ids = {w.intent_id for w in service.get_goal(GOAL).workers}
    saved = sample_kb.parent / "saved-goal"
    shutil.move(sample_kb / GOAL, saved)
    service.sync_kb()
    assert GOAL not in {g.goal_id for g in service.list_goals()}
    with pytest.raises(NotFound):
        service.get_goal(GOAL)
    live = {i.id for i in service.list_intents(include_ended=False)}
    assert not ids & live  # none of its schedules can fire
    shutil.move(saved, sample_kb / GOAL)
    service.sync_kb()
    assert {w.status for w in service.get_goal(GOAL).workers} == {"active"}


def test_a_sync_of_an_unchanged_kb_changes_no_record(
    service: Service, sample_kb: Path, clock
) -> None:
    """Every CLI command syncs the KB: an unchanged KB must not look like a change to the
    consoles (their change token) nor rewrite the goal rows."""
    before = service.change_token()
    stamps = goal_stamps(service)
    clock.advance(60)
    assert service.sync_kb() == []
    assert service.change_token() == before
    path = sample_kb / GOAL / "definition.yaml"
    path.write_text(path.read_text().replace("name: Nightshift", "name: Nightshift two"))
    clock.advance(60)
    service.sync_kb()
    assert service.get_goal(GOAL).name == "Nightshift two"
    assert service.change_token() != before
    after = goal_stamps(service)
    assert after.pop(GOAL) > stamps.pop(GOAL)
    assert after == stamps  # the other goals were left alone


def goal_stamps(service: Service) -> dict[str, object]:
    with service.store.read() as s:
        return {g.goal_id: g.updated_at for g in s.exec(select(Goal)).all()}


def test_goal_status_edited_by_hand_pauses_and_resumes_workers(
    service: Service, sample_kb: Path
) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    text = path.read_text()
    path.write_text(text.replace("status: active", "status: paused"))
    service.sync_kb()
    assert {w.status for w in service.get_goal(GOAL).workers} == {"paused"}
    path.write_text(text)
    service.sync_kb()
    assert {w.status for w in service.get_goal(GOAL).workers} == {"active"}


def test_pause_resume_complete_goal(service: Service, sample_kb: Path, clock) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    comments = [line for line in path.read_text().splitlines() if line.startswith("#")]
    scout = service.worker_intent(GOAL, "scout")
    service.pause_intent(scout.id)  # paused on its own by the operator
    paused = service.pause_goal(GOAL)
    assert paused.status == "paused"
    assert {w.status for w in paused.workers} == {"paused"}
    assert "status: paused" in path.read_text()
    assert [line for line in path.read_text().splitlines() if line.startswith("#")] == comments
    clock.advance(days=2)
    resumed = service.resume_goal(GOAL)
    assert resumed.status == "active"
    workers = {w.name: w for w in resumed.workers}
    assert workers["scout"].status == "paused"  # the operator's own pause is kept
    assert {w.status for n, w in workers.items() if n != "scout"} == {"active"}
    commander = workers["commander"]
    assert commander.next_run_at == datetime(2026, 12, 4, 19, 0, tzinfo=UTC)  # planned from now
    completed = service.complete_goal(GOAL)
    assert completed.status == "completed"
    assert {w.status for w in completed.workers} == {"paused"}
    assert "status: completed" in path.read_text()
    assert service.resume_goal(GOAL).status == "active"


def test_pause_goal_refuses_a_broken_definition(service: Service, sample_kb: Path) -> None:
    path = sample_kb / GOAL / "definition.yaml"
    path.write_text("goal_id: nightshift-979afc6e\nname: [broken\n")
    with pytest.raises(KBError):
        service.pause_goal(GOAL)
    assert path.read_text() == "goal_id: nightshift-979afc6e\nname: [broken\n"
    assert {w.status for w in service.get_goal(GOAL).workers} == {"active"}


def test_run_worker_now(service: Service, clock) -> None:
    intent = service.run_worker_now(GOAL, "commander")
    assert intent.next_run_at == clock.now and intent.pending_trigger == "run-now"
    assert service.worker_intent(GOAL, "commander").next_run_at == clock.now
    with pytest.raises(NotFound):
        service.run_worker_now(GOAL, "nobody")
    with pytest.raises(NotFound):
        service.run_worker_now("no-such-goal", "commander")


def test_delete_goal(service: Service, sample_kb: Path) -> None:
    ids = {w.intent_id for w in service.get_goal(GOAL).workers}
    service.delete_goal(GOAL)
    assert not (sample_kb / GOAL).exists()
    assert not [p for p in sample_kb.iterdir() if p.name.startswith(".trash-")]
    assert GOAL not in {g.goal_id for g in service.list_goals()}
    assert not ids & {i.id for i in service.list_intents(include_ended=False)}
    with pytest.raises(NotFound):
        service.delete_goal(GOAL)
