"""``goalsui worker run-now --wait`` against a real daemon: each call returns the run it
made (not an older one, not a timeout: the wait is cut to 30 s, where the old code waited
its full 600 s for a run it had missed), ten times in a row; with no scheduler running it
says so at once, and ``--here`` runs the turn in the CLI process. How long a call takes is
measured by hand, not asserted (docs/operations.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.base_kit import run_cli
from tests.daemon_kit import Daemon

pytestmark = pytest.mark.slow


def cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, kb=kb, state=state, timeout=60)


def make_goal(kb: Path, state: Path) -> str:
    made = cli(
        kb, state, "goal", "create", "Quick checks", "--task", "answer fast",
        "--worker", "echo", "--every", "1h",
        "--command", f"{sys.executable} -c 'import sys; sys.stdin.read(); print(\"echo ok\")'",
        "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["goal_id"])


def test_run_now_wait_returns_its_own_run_ten_times(empty_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    goal = make_goal(empty_kb, state)
    daemon = Daemon(empty_kb, state)
    try:
        daemon.wait_ready()
        seen: list[int] = []
        for attempt in range(10):
            done = cli(
                empty_kb, state, "worker", "run-now", goal, "echo", "--wait", "--json",
                "--timeout", "30",
            )  # fmt: skip
            assert done.returncode == 0, (attempt, done.stdout, done.stderr, daemon.lines[-20:])
            run = json.loads(done.stdout)
            assert run["status"] == "ok" and run["trigger"] == "run-now", run
            assert run["id"] not in seen and all(run["id"] > s for s in seen), (run, seen)
            seen.append(run["id"])
    finally:
        daemon.stop()


def test_without_a_scheduler_it_says_so_at_once_and_here_runs_the_turn(
    empty_kb: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    goal = make_goal(empty_kb, state)
    # at once: the command's own wait is 600 s, the subprocess is given 60
    refused = cli(empty_kb, state, "worker", "run-now", goal, "echo", "--wait")
    assert refused.returncode == 1
    assert "no scheduler is running" in refused.stderr and "--here" in refused.stderr
    here = cli(empty_kb, state, "worker", "run-now", goal, "echo", "--here", "--json")
    assert here.returncode == 0, here.stderr
    run = json.loads(here.stdout)
    assert run["status"] == "ok" and run["trigger"] == "run-now"
