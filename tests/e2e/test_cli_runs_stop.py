"""``goalsui runs stop RUN`` against a real daemon: only the run stops, the schedule goes on.

Also ``goalsui intent cancel`` / ``intent resume``: an ended schedule is reinstated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.base_kit import run_cli
from tests.daemon_kit import Daemon, alive, runner_config, wait_until

pytestmark = pytest.mark.slow
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, kb=kb, state=state, timeout=60)


def test_runs_stop_stops_the_process_and_keeps_the_schedule(
    empty_kb: Path, tmp_path: Path, make_service: Callable[..., Service]
) -> None:
    state = tmp_path / "state"
    piddir = tmp_path / "pids"
    piddir.mkdir()
    runner_config(empty_kb, [sys.executable, str(SCRIPTS / "sched_sleep.py"), str(piddir), "120"])
    made = cli(
        empty_kb, state, "intent", "add", "--title", "slow", "--instruction", "sleep",
        "--cron", "0 3 * * *", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    intent_id = json.loads(made.stdout)["id"]
    svc = make_service(empty_kb)
    daemon = Daemon(empty_kb, state)
    try:
        daemon.wait_ready()
        assert cli(empty_kb, state, "intent", "run-now", str(intent_id)).returncode == 0
        wait_until(lambda: len(svc.runs.running()) == 1 and any(piddir.glob("*.pid")))
        run_id = svc.runs.running()[0].id
        pid = int(next(piddir.glob("*.pid")).read_text())
        stopped = cli(empty_kb, state, "runs", "stop", str(run_id))
        assert stopped.returncode == 0, stopped.stderr
        assert "schedule goes on" in stopped.stdout
        wait_until(lambda: svc.runs.get(run_id).status == "cancelled", timeout=30)
        wait_until(lambda: svc.intents.get(intent_id).status == "active", timeout=30)
        wait_until(lambda: not alive(pid), timeout=15)
        # a finished run cannot be stopped: one line, exit 1, nothing changed
        again = cli(empty_kb, state, "runs", "stop", str(run_id))
        assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1
        assert "cannot be stopped" in again.stderr and "resume" not in again.stderr
    finally:
        assert daemon.stop() == 0, "\n".join(daemon.lines)
    run = svc.runs.get(run_id)
    assert "stopped by the operator" in (run.reason or "")
    intent = svc.intents.get(intent_id)
    assert intent.status == "active" and intent.next_run_at is not None
    assert intent.pending_trigger is None


def test_intent_cancel_then_resume_reinstates(
    empty_kb: Path, tmp_path: Path, make_service: Callable[..., Service]
) -> None:
    state = tmp_path / "state"
    made = cli(
        empty_kb, state, "intent", "add", "--title", "nightly", "--instruction", "x",
        "--cron", "0 3 * * *", "--json",
    )  # fmt: skip
    intent_id = str(json.loads(made.stdout)["id"])
    ended = cli(empty_kb, state, "intent", "cancel", intent_id)
    assert ended.returncode == 0 and "cancelled" in ended.stdout
    # an ended schedule cannot be paused; the message does not say "resume it first"
    # unless resuming works (it does: resume reinstates)
    paused = cli(empty_kb, state, "intent", "pause", intent_id)
    assert paused.returncode == 1 and "resume it first" in paused.stderr
    back = cli(empty_kb, state, "intent", "resume", intent_id)
    assert back.returncode == 0, back.stderr
    intent = make_service(empty_kb).intents.get(int(intent_id))
    assert intent.status == "active" and intent.next_run_at is not None
    bad = cli(empty_kb, state, "runs", "stop", "nope")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1
