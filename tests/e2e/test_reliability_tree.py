"""A turn's whole process tree ends with its run and with its scheduler (issue 29.2).

``PR_SET_PDEATHSIG`` reaches only the runner itself; the turn supervisor
(``goalsui/runners/supervisor.py``) adopts the rest of the tree, ``setsid()`` children
included. Real processes throughout: ``sh -c 'sleep 300 & wait'`` under a real
``goalsui daemon`` killed with ``kill -9``, children that leave the process group.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

import pytest

from goalsui.runners.command import run_command
from goalsui.runners.lifeline import supervisor_setup
from tests.daemon_kit import Daemon, add_due_now, runner_config, wait_until
from tests.e2e.test_reliability_runner import alive, pids_with, reap

pytestmark = pytest.mark.skipif(
    supervisor_setup() is None, reason="the turn supervisor is Linux-only"
)

PY = sys.executable
# A child that leaves the process group and the session, ignores SIGTERM, and says its pid.
SETSID_CHILD = (
    "import os, signal, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "    open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300); os._exit(0)\n"
    "time.sleep(300)\n"
)


async def _pid_from(path: Path, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        await asyncio.sleep(0.02)
    return int(path.read_text())


async def test_exit_code_signal_stdin_and_output_pass_through() -> None:
    code = "import sys; data = sys.stdin.read(); print(data.upper()); sys.exit(3)"
    result = await run_command([PY, "-c", code], stdin="hello")
    assert (result.status, result.exit_code, result.stdout) == ("failed", 3, "HELLO\n")
    killed = await run_command([PY, "-c", "import os, signal; os.kill(os.getpid(), 15)"])
    assert killed.exit_code == -15 and killed.reason == "killed by SIGTERM"
    env = await run_command([PY, "-c", "import os; print('GOALSUI_SUPERVISED_ARGV' in os.environ)"])
    assert env.stdout == "False\n"


async def test_a_child_that_called_setsid_is_stopped_on_cancel(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    cancel = asyncio.Event()
    task = asyncio.create_task(
        run_command([PY, "-c", SETSID_CHILD, str(pidfile)], cancel=cancel, grace=0.5, timeout=60)
    )
    child = await _pid_from(pidfile)
    try:
        assert alive(child)
        cancel.set()
        result = await asyncio.wait_for(task, 30)
        assert result.status == "cancelled"
        assert not alive(child), "a child that left the process group outlived the cancel"
    finally:
        reap([child])


async def test_a_setsid_child_left_behind_is_stopped_when_the_run_ends(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = (
        "import os, signal, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300); os._exit(0)\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
        "print('done')\n"
    )
    result = await run_command([PY, "-c", script, str(pidfile)], timeout=60)
    child = int(pidfile.read_text())
    try:
        assert (result.status, result.stdout) == ("ok", "done\n")
        assert not alive(child)
    finally:
        reap([child])


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape",
    ["grandchild", "setsid"],
)
def test_kill_9_of_a_daemon_ends_its_turns_whole_tree_within_2_s(
    shape: str, empty_kb, tmp_path, make_service
) -> None:
    marker = f"goalsui-tree-{uuid.uuid4().hex}"
    if shape == "grandchild":
        # the turn's grandchild: a sleep started by the runner's shell
        argv = ["sh", "-c", f"sleep 300 & echo {marker} >/dev/null; wait", marker]
        victim_marker = "sleep 300"
    else:
        argv = ["{python}", "-c", SETSID_CHILD, str(tmp_path / "child.pid"), marker]
        victim_marker = marker
    runner_config(empty_kb, argv, "600s")
    svc = make_service(empty_kb)
    daemon = Daemon(empty_kb, tmp_path / "state")
    try:
        daemon.wait_ready()
        add_due_now(svc, 1)
        wait_until(lambda: len(svc.runs.running()) == 1, timeout=60)
        (run,) = svc.runs.running()
        wait_until(lambda: svc.runs.get(run.id).pgid is not None, timeout=30)
        pgid = svc.runs.get(run.id).pgid
        if shape == "grandchild":
            wait_until(lambda: bool(_sleep_in(pgid)), timeout=30)
            victims = _sleep_in(pgid)
        else:
            wait_until(lambda: (tmp_path / "child.pid").exists(), timeout=30)
            wait_until(lambda: (tmp_path / "child.pid").read_text() != "", timeout=30)
            victims = [int((tmp_path / "child.pid").read_text())]
        assert victims and all(alive(p) for p in victims)
        daemon.kill()
        died = time.monotonic()
        wait_until(lambda: not any(alive(p) for p in victims), timeout=10)
        assert time.monotonic() - died < 2.0, f"the tree outlived its scheduler ({victim_marker})"
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()
        reap(pids_with(marker))


def _sleep_in(pgid: int | None) -> list[int]:
    """Live ``sleep 300`` processes of process group ``pgid``."""
    if not pgid:
        return []
    found = []
    for pid in pids_with("sleep 300"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if int(data[data.rfind(b")") + 2 :].split()[2]) == pgid:
            found.append(pid)
    return found
