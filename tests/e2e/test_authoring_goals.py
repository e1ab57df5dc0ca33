"""Authoring goals from the command line: templates, several workers of different kinds,
all-or-nothing creation, and ``goalsui worker add|remove|pause|resume|show``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.base_kit import run_cli

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

FAIL_ON_WRITE = """
import sys
import goalsui.kb.layout as layout
import goalsui.kb.workers as workers
needle = sys.argv[1]
real = layout.atomic_write
def atomic_write(path, text):
    if needle in str(path):
        raise OSError(28, "No space left on device")
    return real(path, text)
layout.atomic_write = workers.atomic_write = atomic_write
from goalsui.cli import main
sys.exit(main(sys.argv[2:]))
"""


def cli(
    kb: Path, state: Path, *args: str, fail_on: str | None = None
) -> subprocess.CompletedProcess:
    if not fail_on:
        return run_cli(*args, kb=kb, state=state)
    # the CLI with its writes to paths containing fail_on failing
    base = ["--kb", str(kb), "--state-dir", str(state), *args]
    cmd = [sys.executable, "-c", FAIL_ON_WRITE, fail_on, *base]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stderr
    return proc


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def snapshot(kb: Path, db: Path) -> tuple[list[str], dict[str, int]]:
    entries = sorted(str(p.relative_to(kb)) for p in kb.rglob("*"))
    with sqlite3.connect(db) as con:
        rows = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("goal", "intent", "intent_run")
        }
    return entries, rows


@pytest.fixture
def env(empty_kb: Path, tmp_path: Path) -> tuple[Path, Path]:
    state = tmp_path / "state"
    ok(cli(empty_kb, state, "goal", "list"))  # creates the database
    return empty_kb, state


TWO_WORKERS = [
    "goal", "create", "Docs Sweep", "--task", "Keep the handbook current",
    "--worker", "scout", "--cron", "30 20 * * *", "--tz", "Europe/Berlin",
    "--instructions", "Find pages not edited for 90 days.",
    "--command", f"{sys.executable} {SCRIPTS / 'sched_ok.py'}",
    "--capabilities", "read_kb,todos",
    "--worker", "reporter", "--every", "30m", "--runner", "report",
]  # fmt: skip


async def test_two_workers_of_different_kinds_doctor_accepts_and_scheduler_runs(
    env: tuple[Path, Path],
) -> None:
    kb, state = env
    created = json.loads(ok(cli(kb, state, *TWO_WORKERS, "--json")).stdout)
    root = kb / created["goal_id"]
    assert {w["name"]: w["timezone"] for w in created["workers"]} == {
        "reporter": "UTC",
        "scout": "Europe/Berlin",
    }

    protocol = (root / "protocol.md").read_text()
    for section in ("## Purpose", "## Message formats", "## Conventions", "## KPIs"):
        assert section in protocol
    assert "Keep the handbook current" in protocol
    assert yaml.safe_load((root / "state.yaml").read_text()) == {
        "plan": [],
        "decisions": [],
        "baselines": {},
    }
    prompt = (root / "workers" / "scout" / "prompt.md").read_text()
    assert "Find pages not edited for 90 days." in prompt
    assert "Keep the handbook current" in prompt
    assert "Protocol: Docs Sweep" in prompt  # the protocol's name, from its heading
    scout = yaml.safe_load((root / "workers" / "scout" / "definition.yaml").read_text())
    assert scout["schedule"] == {"cron": "30 20 * * *", "timezone": "Europe/Berlin"}
    assert scout["runner"] == {"command": [sys.executable, str(SCRIPTS / "sched_ok.py")]}
    assert scout["capabilities"] == ["read_kb", "todos"]
    reporter = yaml.safe_load((root / "workers" / "reporter" / "definition.yaml").read_text())
    assert reporter["schedule"]["every"] == "30m" and reporter["runner"] == {"builtin": "report"}

    doctor = cli(kb, state, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    service = Service.open(kb, None, state)
    try:
        for worker in ("scout", "reporter"):
            service.workers.run_now(created["goal_id"], worker)
        scheduler = Scheduler(service, grace_seconds=1)
        try:
            started = await scheduler.tick()
            await scheduler.drain(timeout=60)
        finally:
            await scheduler.stop(grace=1)
        assert len(started) == 2
        runs = {r.intent_id: r for r in service.runs.list(limit=10)}
        by_worker = {service.intents.get(i).worker: r for i, r in runs.items()}
        assert by_worker["scout"].status == "ok", by_worker["scout"].reason
        assert by_worker["reporter"].status in ("ok", "silent"), by_worker["reporter"].reason
        assert list((root / "workers" / "scout" / "outbox").iterdir())
    finally:
        service.close()


@pytest.mark.parametrize(
    "fail_on", ["workers/reporter/prompt.md", "workers/scout/definition.yaml", "state.yaml"]
)
def test_an_injected_failure_mid_way_leaves_nothing(env: tuple[Path, Path], fail_on: str) -> None:
    kb, state = env
    before = snapshot(kb, state / "goalsui.db")
    failed = cli(kb, state, *TWO_WORKERS, fail_on=fail_on)
    one_line_error(failed, "No space left on device")
    assert snapshot(kb, state / "goalsui.db") == before


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--worker", "late", "--every", "5s"], "at least 10s"),
        (["--worker", "both", "--cron", "0 9 * * *", "--at", "2030-01-01T09:00Z"], "exactly one"),
        (["--worker", "none"], "exactly one of --cron, --every or --at"),
        (["--worker", "tz", "--cron", "0 9 * * *", "--tz", "Mars/Olympus"], "Mars/Olympus"),
        (["--worker", "x", "--at", "2030-01-01T09:00Z", "--command", "a", "--runner", "report"], "not both"),
        (["--worker", "../up", "--cron", "0 9 * * *"], "worker name"),
        (["--worker", "scout", "--cron", "0 9 * * *"], "given twice"),
    ],
)  # fmt: skip
def test_a_bad_second_worker_creates_nothing(
    env: tuple[Path, Path], extra: list[str], needle: str
) -> None:
    kb, state = env
    before = snapshot(kb, state / "goalsui.db")
    one_line_error(cli(kb, state, *TWO_WORKERS, *extra), needle)
    assert snapshot(kb, state / "goalsui.db") == before


def test_options_outside_a_worker_are_refused(env: tuple[Path, Path]) -> None:
    kb, state = env
    one_line_error(
        cli(kb, state, "goal", "create", "G", "--task", "t", "--cron", "0 9 * * *"),
        "argument --cron: must follow --worker NAME",
    )


def test_the_older_name_equals_cron_form_and_a_given_protocol(
    env: tuple[Path, Path], tmp_path: Path
) -> None:
    kb, state = env
    proto = tmp_path / "proto.md"
    proto.write_text("# Release contract\n\nShip on Mondays.\n")
    created = json.loads(
        ok(
            cli(
                kb,
                state,
                "goal",
                "create",
                "Release",
                "--task",
                "ship",
                "--worker",
                "planner=0 9 * * 1",
                "--worker",
                "checker=30 9 * * 1-5",
                "--tz",
                "Europe/Berlin",
                "--protocol",
                f"@{proto}",
                "--json",
            )  # fmt: skip
        ).stdout
    )
    assert {w["timezone"] for w in created["workers"]} == {"Europe/Berlin"}
    root = kb / created["goal_id"]
    assert (root / "protocol.md").read_text() == proto.read_text()
    assert "Release contract" in (root / "workers" / "planner" / "prompt.md").read_text()


def test_worker_add_show_pause_resume_remove(env: tuple[Path, Path]) -> None:
    kb, state = env
    goal = json.loads(ok(cli(kb, state, "goal", "create", "Ops", "--task", "t", "--json")).stdout)
    gid = goal["goal_id"]
    added = json.loads(
        ok(
            cli(
                kb,
                state,
                "worker",
                "add",
                gid,
                "watch",
                "--at",
                "2031-05-01T08:00",
                "--tz",
                "Europe/Paris",
                "--instructions",
                "Check the on-call rota.",
                "--json",
            )  # fmt: skip
        ).stdout
    )
    assert added["name"] == "watch" and added["status"] == "active"
    assert added["next_run_at"].startswith("2031-05-01T06:00")  # 08:00 in Paris, in UTC
    assert not [p for p in (kb / gid / "workers").iterdir() if p.name.startswith(".")]

    shown = ok(cli(kb, state, "worker", "show", gid, "watch")).stdout
    assert "Check the on-call rota." in shown and "2031-05-01T08:00" in shown
    paused = json.loads(ok(cli(kb, state, "worker", "pause", gid, "watch", "--json")).stdout)
    assert paused["status"] == "paused"
    resumed = json.loads(ok(cli(kb, state, "worker", "resume", gid, "watch", "--json")).stdout)
    assert resumed["status"] == "active"

    one_line_error(cli(kb, state, "worker", "add", gid, "watch", "--every", "1h"), "already has")
    ok(cli(kb, state, "worker", "remove", gid, "watch"))
    assert not (kb / gid / "workers" / "watch").exists()
    assert not [p for p in (kb / gid / "workers").iterdir() if p.name.startswith(".")]
    one_line_error(cli(kb, state, "worker", "show", gid, "watch"), "no worker 'watch'")
    intents = json.loads(ok(cli(kb, state, "intent", "list", "--json")).stdout)
    assert [i["status"] for i in intents if i.get("worker") == "watch"] == ["cancelled"]


def test_worker_add_failure_leaves_no_folder(env: tuple[Path, Path]) -> None:
    kb, state = env
    goal = json.loads(ok(cli(kb, state, "goal", "create", "Ops", "--task", "t", "--json")).stdout)
    gid = goal["goal_id"]
    before = snapshot(kb, state / "goalsui.db")
    one_line_error(
        cli(kb, state, "worker", "add", gid, "w", "--cron", "0 9 * * *", fail_on="prompt.md"),
        "No space left",
    )
    one_line_error(cli(kb, state, "worker", "add", gid, "w", "--cron", "0 99 * * *"), "invalid")
    assert snapshot(kb, state / "goalsui.db") == before
