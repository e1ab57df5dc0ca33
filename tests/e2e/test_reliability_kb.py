"""Nothing in the KB can hang goalsui, and a prompt.md that cannot be read is reported
(issue 21.5 and 21.10).

Real FIFOs (``os.mkfifo``) in place of KB files, real subprocesses of the command line
and of ``goalsui daemon``, a real SQLite file. Every subprocess has a timeout: on the
code before this fix they block forever on the FIFO.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from goalsui.errors import KBError
from goalsui.kb.layout import KB, WorkerSeed
from goalsui.kb.quick import read_goals
from goalsui.kb.regular import read_regular
from goalsui.service import Service
from tests.base_kit import clean_environ, run_cli
from tests.daemon_kit import Daemon, wait_until

PROMPTLY = 60  # seconds; a hang is what is tested, not speed


def cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, kb=kb, state=state, env=clean_environ(), timeout=PROMPTLY)


def make_goal(svc: Service, every: str = "30m") -> tuple[str, Path]:
    view = svc.goals.create(
        "Fifo Test",
        "nothing blocks",
        [
            WorkerSeed(
                "watch",
                {"schedule": {"every": every}, "runner": {"command": ["cat"]}},
                prompt="- check the queue\n",
            )
        ],
    )
    return view.goal_id, svc.kb.root / view.goal_id


def swap_for_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def unreadable(path: Path) -> None:
    """Make ``path`` unreadable for this user: chmod 000, or a folder in its place as
    root (root reads a 000 file anyway)."""
    if os.geteuid() == 0:
        path.unlink()
        path.mkdir()
    else:
        path.chmod(0)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "prompt.md"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            read_regular(fifo, 1024, "prompt.md")
        except KBError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(PROMPTLY)
    if reader.is_alive():  # release the stuck reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO blocked")
    assert [str(e) for e in outcome] == [
        "prompt.md: not a regular file: a FIFO (named pipe); goalsui reads only files"
    ]


def test_fifo_prompt_and_definition_doctor_and_cli_finish_with_one_line(
    empty_kb: Path, tmp_path: Path, make_service
) -> None:
    svc = make_service(empty_kb)
    goal_id, goal = make_goal(svc)
    svc.close()
    swap_for_fifo(goal / "workers" / "watch" / "prompt.md")
    state = tmp_path / "state"
    doctor = cli(empty_kb, state, "doctor")
    assert doctor.returncode == 1, doctor.stderr
    [line] = [ln for ln in doctor.stdout.splitlines() if "prompt.md" in ln]
    assert line == (
        f"{goal_id}/workers/watch/prompt.md: not a regular file: a FIFO (named pipe); "
        "goalsui reads only files"
    )
    swap_for_fifo(goal / "workers" / "watch" / "definition.yaml")
    doctor = cli(empty_kb, state, "doctor")
    assert doctor.returncode == 1
    assert f"{goal_id}/workers/watch/definition.yaml: not a regular file: a FIFO" in doctor.stdout
    shown = cli(empty_kb, state, "goal", "show", goal_id)
    assert shown.returncode == 0, shown.stderr
    swap_for_fifo(goal / "definition.yaml")
    listed = cli(empty_kb, state, "goal", "list")
    assert listed.returncode == 0, listed.stderr
    doctor = cli(empty_kb, state, "doctor")
    assert f"{goal_id}/definition.yaml: not a regular file: a FIFO" in doctor.stdout
    assert [g.name for g in read_goals(empty_kb)] == [goal_id]  # the console's first frame


@pytest.mark.slow
def test_a_worker_turn_with_a_fifo_prompt_does_not_hang_the_daemon(
    empty_kb: Path, tmp_path: Path, make_service
) -> None:
    svc = make_service(empty_kb)
    goal_id, goal = make_goal(svc)
    swap_for_fifo(goal / "workers" / "watch" / "prompt.md")
    state = tmp_path / "state"
    daemon = Daemon(empty_kb, state, "--grace-seconds", "1")
    try:
        daemon.wait_ready()
        fired = cli(empty_kb, state, "worker", "run-now", goal_id, "watch")
        assert fired.returncode == 0, fired.stderr
        wait_until(lambda: len(svc.runs.list()) == 1, timeout=PROMPTLY)
        (run,) = svc.runs.list()
        assert run.status == "skipped"  # the prompt cannot be read: nothing to run
        listed = cli(empty_kb, state, "intent", "list")  # the database is not held
        assert listed.returncode == 0
    finally:
        code = daemon.stop()  # SIGTERM ends it within its grace, the FIFO notwithstanding
    assert code == 0, "\n".join(daemon.lines)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.write_bytes(b"- check\x00\x01\x02 the queue\n"), id="nul-bytes"),
        pytest.param(lambda p: p.write_bytes(b"- check \xff\xfe the queue\n"), id="bad-utf8"),
        pytest.param(unreadable, id="unreadable"),
    ],
)
def test_a_prompt_that_cannot_be_read_is_reported_and_badged(
    empty_kb: Path, tmp_path: Path, make_service, damage
) -> None:
    svc = make_service(empty_kb)
    goal_id, goal = make_goal(svc)
    assert svc.goals.get(goal_id).error is None
    prompt = goal / "workers" / "watch" / "prompt.md"
    damage(prompt)
    try:
        doctor = cli(empty_kb, tmp_path / "state", "doctor")
        assert doctor.returncode == 1
        assert f"{goal_id}/workers/watch/prompt.md" in doctor.stdout
        problems = [p for p in svc.index.doctor() if p.path.endswith("prompt.md")]
        assert len(problems) == 1, problems
        svc.index.sync([goal_id])
        (row,) = [g for g in svc.goals.list() if g.goal_id == goal_id]
        assert row.error and "prompt.md" in row.error
        assert any(i.worker == "watch" for i in svc.intents.list())  # still scheduled
    finally:
        if prompt.is_dir():
            prompt.rmdir()
        elif prompt.exists():
            prompt.chmod(0o644)


def test_the_kb_reader_reads_a_good_prompt(empty_kb: Path, make_service) -> None:
    svc = make_service(empty_kb)
    goal_id, _ = make_goal(svc)
    assert KB(empty_kb).tree(goal_id).read("workers/watch/prompt.md") == "- check the queue\n"
    assert not [p for p in svc.index.doctor() if p.path.endswith("prompt.md")]
