"""Bounded state: state.yaml has a size bound; every YAML file of the KB is validated
(doctor, the goal's error badge in the console)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from goalsui.errors import GoalsuiError
from goalsui.kb.layout import KB, WorkerSeed
from goalsui.runners.turn import run_turn
from goalsui.service import Service
from goalsui.tui.app import make_app
from tests.base_kit import FakeClock, run_cli
from tests.e2e.test_runner_turn import start_run
from tests.tui_kit import PULSE, label, open_demo, settle, wait_for, watching

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
BROKEN_STATE = "plan: []\ndecisions: []\nbaselines: note: unquoted colon\n"


def doctor(kb: Path, state: Path) -> subprocess.CompletedProcess:
    return run_cli("doctor", "--json", kb=kb, state=state)


@pytest.fixture
def svc(empty_kb: Path, make_service) -> Service:
    return make_service(empty_kb)


def make_goal(svc: Service, runner: list[str] | None = None) -> str:
    definition: dict = {"schedule": {"cron": "0 3 * * *"}}
    if runner:
        definition["runner"] = {"command": runner}
    return svc.goals.create("Bounded", "keep state small", [WorkerSeed("w", definition)]).goal_id


def test_doctor_reports_a_broken_state_yaml_with_file_and_line(
    svc: Service, empty_kb: Path, tmp_path: Path
) -> None:
    gid = make_goal(svc)
    clean = doctor(empty_kb, tmp_path / "state")
    assert clean.returncode == 0, clean.stdout
    (empty_kb / gid / "state.yaml").write_text(BROKEN_STATE)
    (empty_kb / gid / "workers" / "w" / "notes.yaml").write_text("a: 1\na: 2\n")
    (empty_kb / gid / "workers" / "w" / "outbox" / "result.yaml").write_text(": not ours")
    broken = doctor(empty_kb, tmp_path / "state")
    assert broken.returncode == 1
    problems = {p["path"]: p for p in json.loads(broken.stdout)["problems"]}
    assert problems[f"{gid}/state.yaml"]["line"] == 3
    assert f"{gid}/workers/w/notes.yaml" in problems  # a duplicate key, any YAML file
    assert f"{gid}/workers/w/outbox/result.yaml" not in problems  # results are not the KB's
    # ... and the goal carries the error (the console's badge) while its worker runs on.
    assert svc.index.sync([gid])
    view = svc.goals.get(gid)
    assert view.error and f"{gid}/state.yaml:3" in view.error
    assert [w.status for w in view.workers] == ["active"]


def test_state_yaml_that_is_not_a_mapping_is_a_problem(svc: Service, empty_kb: Path) -> None:
    gid = make_goal(svc)
    (empty_kb / gid / "state.yaml").write_text("- just\n- a list\n")
    problems = svc.index.sync([gid])
    assert [(p.path, p.line) for p in problems] == [(f"{gid}/state.yaml", 1)]
    assert "mapping" in problems[0].message


def test_a_tool_write_over_the_bound_is_refused(svc: Service, empty_kb: Path) -> None:
    (empty_kb / "goalsui.yaml").write_text("state_max_bytes: 200\n")
    svc.config(reload=True)
    gid = make_goal(svc)
    before = (empty_kb / gid / "state.yaml").read_text()
    svc.files.write(gid, "state.yaml", "plan: [a, b]\n")  # small: accepted
    with pytest.raises(GoalsuiError, match=r"over the state bound of 200 bytes") as err:
        svc.files.write(gid, "state.yaml", "plan: []\nnotes: " + "x" * 300 + "\n")
    assert "state_max_bytes" in str(err.value) and "\n" not in str(err.value)
    assert (empty_kb / gid / "state.yaml").read_text() == "plan: [a, b]\n" != before
    # The check the tool server calls before a write.
    kb = KB(empty_kb)
    kb.check_text(gid, ("state.yaml",), "x" * 200, "shown")
    with pytest.raises(GoalsuiError, match=f"{gid}/state.yaml: 201 bytes"):
        kb.check_text(gid, ("state.yaml",), "x" * 201, "shown")


def test_the_default_bound_is_64_kib(svc: Service) -> None:
    gid = make_goal(svc)
    svc.kb.check_text(gid, ("state.yaml",), "x" * 64 * 1024, "shown")
    with pytest.raises(GoalsuiError, match="65537 bytes is over the state bound of 65536"):
        svc.kb.check_text(gid, ("state.yaml",), "x" * (64 * 1024 + 1), "shown")


def test_a_bad_bound_in_goalsui_yaml_is_reported(svc: Service, empty_kb: Path) -> None:
    (empty_kb / "goalsui.yaml").write_text("silent_token: X\nstate_max_bytes: lots\n")
    problems = svc.index.doctor()
    assert [(p.path, p.line) for p in problems] == [("goalsui.yaml", 2)]


async def test_a_run_that_grows_state_over_the_bound_fails_and_is_put_back(
    svc: Service, empty_kb: Path
) -> None:
    (empty_kb / "goalsui.yaml").write_text("state_max_bytes: 1000\n")
    svc.config(reload=True)
    grow = [sys.executable, str(SCRIPTS / "run_grow_state.py")]
    gid = svc.goals.create(
        "Bounded",
        "t",
        [
            WorkerSeed("big", {"schedule": {"cron": "0 3 * * *"}, "runner": {"command": [*grow, "5000"]}}),
            WorkerSeed("small", {"schedule": {"cron": "0 3 * * *"}, "runner": {"command": [*grow, "300"]}}),
        ],
    ).goal_id  # fmt: skip
    before = (empty_kb / gid / "state.yaml").read_text()
    big = svc.workers.intent(gid, "big")
    outcome = await run_turn(svc, big, start_run(svc, big), cancel=asyncio.Event())
    assert outcome.status == "failed"
    assert "over the state bound of 1000 bytes" in (outcome.reason or "")
    assert (empty_kb / gid / "state.yaml").read_text() == before  # put back as it was
    small = svc.workers.intent(gid, "small")
    outcome = await run_turn(svc, small, start_run(svc, small), cancel=asyncio.Event())
    assert outcome.status == "ok", outcome.reason
    assert 250 < len((empty_kb / gid / "state.yaml").read_bytes()) <= 1000


async def test_the_console_badges_a_goal_whose_state_yaml_breaks(
    tmp_path: Path, clock: FakeClock, template: Path
) -> None:
    demo = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    try:
        app = make_app(demo, scheduler=False, watch=True, clock=clock)
        async with app.run_test(size=(110, 36)) as pilot:
            await settle(app, pilot)
            await watching(app, pilot)
            goal_node = app.main.goals.goal_nodes[PULSE]
            assert "error in KB" not in label(goal_node)
            (demo.kb.root / PULSE / "state.yaml").write_text(BROKEN_STATE)
            await wait_for(pilot, lambda: "error in KB" in label(goal_node), what="error badge")
            toasts = [n.message for n in app.notices if n.title == "KB error"]
            assert any(f"{PULSE}/state.yaml:3" in m for m in toasts), toasts
            (demo.kb.root / PULSE / "state.yaml").write_text("plan: []\n")
            await wait_for(pilot, lambda: "error in KB" not in label(goal_node), what="badge gone")
    finally:
        demo.close()
