"""The command line as an operator's script sees it: real processes, JSON shapes, exit codes.

Every command runs as ``python -m goalsui --kb KB --state-dir STATE ...`` against a real
KB folder and a real SQLite file. Independent commands run in parallel to keep this fast.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.store.models import IntentRun
from tests.base_kit import cli_argv

GOAL = "nightshift-979afc6e"
GOAL_KEYS = {"goal_id", "name", "task", "status", "path", "workers"}
WORKER_KEYS = {"name", "schedule", "timezone", "intent_id", "next_run_at"}
INTENT_KEYS = {
    "id", "title", "kind", "status", "thread_id", "goal_id", "worker", "schedule", "timezone",
    "next_run_at", "operation_key", "attempts", "consecutive_failures", "last_error",
}  # fmt: skip
RUN_KEYS = {
    "id",
    "intent_id",
    "attempt",
    "trigger",
    "status",
    "needs_review",
    "reason",
    "started_at",
    "finished_at",
    "exit_code",
    "duration_s",
    "usage",
}
TODO_KEYS = {"id", "text", "done", "position"}
ISO_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


def start(kb: Path, state: Path, *args: str) -> subprocess.Popen:
    cmd = cli_argv(*args, kb=kb, state=state)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def run(kb: Path, state: Path, *args: str) -> tuple[int, str, str]:
    return finish(start(kb, state, *args))


def run_json(kb: Path, state: Path, *args: str):
    rc, out, err = run(kb, state, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def run_all(kb: Path, state: Path, commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run independent commands at once (two cores), results in order."""
    results: list[tuple[int, str, str]] = []
    for i in range(0, len(commands), 4):
        procs = [start(kb, state, *c) for c in commands[i : i + 4]]
        results.extend(finish(p) for p in procs)
    return results


def check_goal(data: dict) -> None:
    assert set(data) == GOAL_KEYS
    for worker in data["workers"]:
        assert set(worker) == WORKER_KEYS
        assert worker["next_run_at"] is None or ISO_OFFSET.match(worker["next_run_at"])


def check_intent(data: dict) -> None:
    assert set(data) == INTENT_KEYS
    assert data["next_run_at"] is None or ISO_OFFSET.match(data["next_run_at"])


def db_rows(state: Path) -> dict[str, int]:
    with sqlite3.connect(state / "goalsui.db") as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def kb_tree(kb: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(kb)): None if p.is_dir() else p.read_bytes()
        for p in sorted(kb.rglob("*"))
    }


@pytest.fixture
def cli_env(sample_kb: Path, tmp_path: Path) -> tuple[Path, Path]:
    return sample_kb, tmp_path / "state"


def test_json_shapes_of_every_listing_and_create(cli_env: tuple[Path, Path]) -> None:
    kb, state = cli_env
    created = run_json(
        kb, state, "goal", "create", "Release Train", "--task", "ship weekly",
        "--worker", "planner=0 9 * * 1", "--worker", "checker=30 9 * * 1-5", "--tz", "Europe/Berlin",
    )  # fmt: skip
    check_goal(created)
    assert created["name"] == "Release Train" and created["status"] == "active"
    assert [w["name"] for w in created["workers"]] == ["checker", "planner"]
    assert created["workers"][0]["timezone"] == "Europe/Berlin"
    assert (kb / created["goal_id"] / "workers" / "planner" / "prompt.md").is_file()

    thread = run_json(kb, state, "thread", "new", "Visa application")
    todo = run_json(kb, state, "todo", "add", str(thread["id"]), "Book the appointment")
    assert set(todo) == TODO_KEYS and todo == {
        "id": todo["id"],
        "text": "Book the appointment",
        "done": False,
        "position": 1,
    }
    intent = run_json(
        kb, state, "intent", "add", "--title", "Friday reminder", "--instruction", "go through the list",
        "--cron", "0 16 * * 5", "--tz", "Europe/Berlin", "--thread", str(thread["id"]), "--key", "fri",
    )  # fmt: skip
    check_intent(intent)
    assert intent["next_run_at"].endswith("+00:00") and intent["timezone"] == "Europe/Berlin"
    assert (intent["kind"], intent["status"], intent["operation_key"]) == ("cron", "active", "fri")

    # a run to list, written where a scheduler would write it
    service = Service.open(kb, None, state)
    try:
        with service.store.write() as s:
            now = datetime.now(UTC).replace(microsecond=0)
            s.add(IntentRun(intent_id=intent["id"], attempt=1, trigger="schedule", status="failed",
                            reason="exit code 3", started_at=now - timedelta(seconds=5),
                            finished_at=now, exit_code=3))  # fmt: skip
    finally:
        service.close()

    commands = [
        ["goal", "list", "--json"],
        ["goal", "show", created["goal_id"], "--json"],
        ["intent", "list", "--json"],
        ["intent", "show", str(intent["id"]), "--json"],
        ["runs", "--json"],
        ["runs", "--failed", "--intent", str(intent["id"]), "--limit", "5", "--json"],
        ["todo", "list", str(thread["id"]), "--json"],
        ["schedule", "preview", "30 2 * * *", "--tz", "Europe/Berlin", "--from", "2026-03-28T00:00:00Z", "--count", "3", "--json"],
    ]  # fmt: skip
    results = run_all(kb, state, commands)
    assert [(rc, err) for rc, _, err in results] == [(0, "")] * len(commands)
    goals, shown, intents, intent_shown, runs, failed, todos, preview = (
        json.loads(o) for _, o, _ in results
    )
    for goal in goals:
        check_goal(goal)
    assert {g["goal_id"] for g in goals} >= {GOAL, created["goal_id"]}
    assert shown == created
    for item in intents:
        check_intent(item)
    assert intent in intents
    assert set(intent_shown) == INTENT_KEYS | {"runs"}
    for listing in (runs, failed, intent_shown["runs"]):
        assert len(listing) == 1 and set(listing[0]) == RUN_KEYS
        assert ISO_OFFSET.match(listing[0]["started_at"]) and listing[0]["exit_code"] == 3
    assert [set(t) for t in todos] == [TODO_KEYS]
    assert preview == {
        "expression": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "occurrences": [
            "2026-03-28T02:30:00+01:00",
            "2026-03-29T03:00:00+02:00",
            "2026-03-30T02:30:00+02:00",
        ],
    }

    # actions print the changed record in the same shapes
    actions = run_all(
        kb, state,
        [["intent", "pause", str(intent["id"]), "--json"],
         ["todo", "done", str(thread["id"]), str(todo["id"]), "--json"],
         ["goal", "pause", GOAL, "--json"]],
    )  # fmt: skip
    assert [rc for rc, _, _ in actions] == [0, 0, 0]
    paused, done, goal_paused = (json.loads(o) for _, o, _ in actions)
    check_intent(paused)
    assert paused["status"] == "paused"
    assert done == {**todo, "done": True}
    check_goal(goal_paused)
    assert goal_paused["status"] == "paused"


def test_bad_input_one_line_exit_1_nothing_changed(
    cli_env: tuple[Path, Path], tmp_path: Path
) -> None:
    kb, state = cli_env
    private = run_json(kb, state, "thread", "new", "Taxes", "--private")
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database\n")
    bad = [
        ["intent", "add", "--title", "t", "--instruction", "i", "--cron", "61 * * * *"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--cron", "0 9 * * *", "--tz", "Mars/Olympus"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--at", "2026-13-01T09:00:00Z"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--at", "2027-01-01T09:00"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--every", "5x"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--event", "ci", "--cooldown=-5m"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--event", "ci", "--filter", "{bad json"],
        ["intent", "add", "--title", "t", "--instruction", "i", "--cron", "0 9 * * *", "--thread", str(private["id"]), "--key", "k"],
        ["intent", "show", "abc"],
        ["intent", "pause", "999"],
        ["runs", "--limit", "0"],
        ["goal", "show", "no-such-goal-1"],
        ["goal", "pause", "../etc"],
        ["goal", "create", "x", "--task", "t", "--worker", "a=61 * * * *"],
        ["goal", "create", "x", "--task", "t", "--worker", "../a=0 9 * * *"],
        ["worker", "run-now", GOAL, "../scout"],
        ["todo", "add", "999", "x"],
        ["schedule", "preview", "0 9 * * *", "--from", "soon"],
        ["--db", "mysql://localhost/x", "goal", "list"],
        ["--db", f"sqlite:///{not_a_db}", "intent", "list"],
        ["--state-dir", str(not_a_db / "sub"), "goal", "list"],
        ["goals", "list"],
        ["intnet", "pause", "1"],
    ]  # fmt: skip
    rows, tree = db_rows(state), kb_tree(kb)
    results = run_all(kb, state, bad)
    for args, (rc, out, err) in zip(bad, results, strict=True):
        assert rc == 1, (args, rc, err)
        assert out == "", (args, out)
        assert err.startswith("goalsui: error: ") and err.count("\n") == 1, (args, err)
        assert "Traceback" not in err
    assert db_rows(state) == rows
    assert kb_tree(kb) == tree
    assert not_a_db.read_text() == "not a database\n"


def test_a_mistyped_command_is_named_with_the_closest_one(cli_env: tuple[Path, Path]) -> None:
    kb, state = cli_env
    rc, out, err = run(kb, state, "goals", "list")
    assert (rc, out) == (1, "")
    assert (
        err
        == "goalsui: error: unknown command 'goals'; did you mean 'goal'? (see 'goalsui --help')\n"
    )
    rc, _, err = run(kb, state, "frobnicate")
    assert (
        rc == 1 and err == "goalsui: error: unknown command 'frobnicate' (see 'goalsui --help')\n"
    )
    rc, _, err = run(kb, state, "--no-scheduler", "--read-only", "--bogus")
    assert (
        rc == 1 and "unrecognized arguments: --bogus" in err
    )  # console options still go to the console


def test_missing_kb_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    missing, state = tmp_path / "no-kb", tmp_path / "fresh-state"
    results = run_all(missing, state, [["goal", "list", "--json"], ["doctor"]])
    for rc, out, err in results[:1]:
        assert rc == 1 and out == ""
        assert err.startswith("goalsui: error: no KB at ") and err.count("\n") == 1
    rc, out, _ = results[1]
    assert rc == 1 and "no KB folder here" in out
    assert not missing.exists() and not state.exists()
