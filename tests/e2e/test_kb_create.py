"""A goal appears whole or not at all: injected failures leave no folder, staging or rows."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from goalsui.errors import GoalsuiError
from goalsui.kb.layout import WorkerSeed
from goalsui.service import Service
from tests.base_kit import run_cli

WORKERS = [
    WorkerSeed(f"w{i}", {"schedule": {"cron": f"{i} 20 * * *", "timezone": "Europe/Berlin"}})
    for i in range(3)
]


def db_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as con:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("goal", "intent", "intent_run")
        }


def kb_entries(kb: Path) -> list[str]:
    return sorted(p.name for p in kb.iterdir())


def assert_nothing_left(kb: Path, before_entries: list[str], db: Path, before_rows: dict) -> None:
    assert kb_entries(kb) == before_entries  # no goal folder, no .staging-*
    assert db_counts(db) == before_rows  # no goal row, no schedule (intent) rows


@pytest.fixture
def svc(sample_kb: Path, make_service, tmp_path: Path) -> Service:
    return make_service(sample_kb)


def state_db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "goalsui.db"


def test_setup_goal_creates_the_whole_tree(svc: Service, sample_kb: Path, tmp_path: Path) -> None:
    before = db_counts(state_db(tmp_path))
    view = svc.goals.create("Nightly Docs Sweep!", "Sweep the docs", WORKERS, owner="ops")
    assert (
        view.goal_id.startswith("nightly-docs-sweep-") and len(view.goal_id.rsplit("-", 1)[1]) == 8
    )
    root = sample_kb / view.goal_id
    for rel in ("definition.yaml", "protocol.md", "state.yaml", "log", "reports"):
        assert (root / rel).exists(), rel
    for seed in WORKERS:
        for rel in ("definition.yaml", "prompt.md", "inbox", "outbox"):
            assert (root / "workers" / seed.name / rel).exists()
    assert [w.name for w in view.workers] == ["w0", "w1", "w2"]
    assert all(w.intent_id and w.next_run_at for w in view.workers)
    assert db_counts(state_db(tmp_path))["intent"] == before["intent"] + 3
    assert list((root / "log").iterdir())  # "goal created" logged
    assert not [n for n in kb_entries(sample_kb) if n.startswith(".staging-")]


@pytest.mark.parametrize(
    "inject",
    [
        {"_fail_after_workers": 0},
        {"_fail_after_workers": 1},
        {"_fail_after_workers": 2},
    ],
)
def test_setup_goal_failure_hooks_leave_nothing(
    svc: Service, sample_kb: Path, tmp_path: Path, inject: dict
) -> None:
    entries, rows = kb_entries(sample_kb), db_counts(state_db(tmp_path))
    with pytest.raises(GoalsuiError, match="injected failure"):
        svc.goals.create("Doomed", "never", WORKERS, **inject)
    assert_nothing_left(sample_kb, entries, state_db(tmp_path), rows)
    assert "Doomed" not in {g.name for g in svc.goals.list()}


def test_failing_rename_rolls_back_every_schedule(
    svc: Service, sample_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, rows = kb_entries(sample_kb), db_counts(state_db(tmp_path))
    registered: list[int] = []
    real_rename = os.rename

    def rename(src: str, dst: str) -> None:
        if ".staging-" in str(src):
            registered.extend(i.id for i in svc.intents.list() if i.title.startswith("Doomed"))
            raise OSError(5, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)  # the os module the goal tree is built with
    with pytest.raises(GoalsuiError, match="could not create the goal tree"):
        svc.goals.create("Doomed", "never", WORKERS)
    assert len(registered) == 3  # they were registered, then rolled back
    assert_nothing_left(sample_kb, entries, state_db(tmp_path), rows)


def test_failing_registration_is_all_or_nothing(
    svc: Service, sample_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, rows = kb_entries(sample_kb), db_counts(state_db(tmp_path))
    from goalsui.service import kbindex

    real = kbindex.upsert_worker_intent
    calls = {"n": 0}

    def flaky(s, goal, w, intent, active, now):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("database went away")
        return real(s, goal, w, intent, active, now)

    monkeypatch.setattr(kbindex, "upsert_worker_intent", flaky)
    with pytest.raises(RuntimeError):
        svc.goals.create("Doomed", "never", WORKERS)
    assert_nothing_left(sample_kb, entries, state_db(tmp_path), rows)


def test_invalid_worker_schedule_creates_nothing(
    svc: Service, sample_kb: Path, tmp_path: Path
) -> None:
    entries, rows = kb_entries(sample_kb), db_counts(state_db(tmp_path))
    bad = [*WORKERS, WorkerSeed("w9", {"schedule": {"cron": "99 * * * *"}})]
    with pytest.raises(GoalsuiError, match="invalid cron"):
        svc.goals.create("Doomed", "never", bad)
    assert_nothing_left(sample_kb, entries, state_db(tmp_path), rows)


# -- through the command line ----------------------------------------------------------------------
WRAPPER = """
import os, signal, sys
import goalsui.kb.layout as layout
mode = sys.argv[1]
real = os.rename
def rename(src, dst):
    if ".staging-" in str(src):
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(28, "No space left on device")
    return real(src, dst)
layout.os.rename = rename
from goalsui.cli import main
sys.exit(main(sys.argv[2:]))
"""


def cli(kb: Path, state: Path, *args: str, wrap: str | None = None) -> subprocess.CompletedProcess:
    if not wrap:
        return run_cli(*args, kb=kb, state=state, timeout=60)
    # the CLI with its staging rename failing (or killed there)
    cmd = [sys.executable, "-c", WRAPPER, wrap, "--kb", str(kb), "--state-dir", str(state), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_cli_goal_create_failure_leaves_nothing(sample_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    ok = cli(sample_kb, state, "goal", "list", "--json")  # index the KB, create the database
    assert ok.returncode == 0, ok.stderr
    entries, rows = kb_entries(sample_kb), db_counts(state / "goalsui.db")
    args = [
        "goal",
        "create",
        "Doomed",
        "--task",
        "t",
        "--worker",
        "a=0 20 * * *",
        "--worker",
        "b=0 21 * * *",
    ]
    failed = cli(sample_kb, state, *args, "--json", wrap="fail")
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.startswith("goalsui: error: ") and "No space left" in failed.stderr
    assert_nothing_left(sample_kb, entries, state / "goalsui.db", rows)


def test_cli_goal_create_killed_mid_way_is_cleaned_up(sample_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert cli(sample_kb, state, "goal", "list").returncode == 0
    entries, rows = kb_entries(sample_kb), db_counts(state / "goalsui.db")
    args = ["goal", "create", "Doomed", "--task", "t", "--worker", "a=0 20 * * *"]
    killed = cli(sample_kb, state, *args, wrap="kill")
    assert killed.returncode == -signal.SIGKILL
    # The crash left its staging folder (and committed schedule rows) behind ...
    assert [n for n in kb_entries(sample_kb) if n.startswith(".staging-doomed-")]
    # ... and the next goalsui start removes both: the goal never appears.
    listing = cli(sample_kb, state, "goal", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    assert "Doomed" not in {g["name"] for g in json.loads(listing.stdout)}
    assert_nothing_left(sample_kb, entries, state / "goalsui.db", rows)


def test_a_live_creation_is_not_swept_by_another_process(svc: Service, sample_kb: Path) -> None:
    """Another process's start-up sync must not remove a creation still in progress."""
    staging = sample_kb / f".staging-inflight-00000001-{os.getpid()}-abcdef"
    staging.mkdir()
    assert svc.kb.creating("inflight-00000001")
    assert staging.name not in svc.kb.cleanup_leftovers()
    assert staging.is_dir()
    dead = sample_kb / ".staging-gone-00000001-999999999-abcdef"
    dead.mkdir()
    assert dead.name in svc.kb.cleanup_leftovers()
    assert not dead.exists()
