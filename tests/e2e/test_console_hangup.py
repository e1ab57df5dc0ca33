"""A console whose terminal closes stops its runs cleanly and records them (issue 21.1).

A real ``goalsui console`` runs in a real pseudo-terminal (``pty.fork``: the console is
the session leader and the pty its controlling terminal). Its scheduler starts a runner
that sleeps; then the terminal goes away (the master side is closed, so the kernel
sends SIGHUP), or the console gets SIGHUP or SIGTERM from kill. It must exit, the runner's process group
must be gone, and the run must be recorded (``interrupted``), not left ``running``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import threading
import uuid
from pathlib import Path

import pytest

from goalsui.domain.timeutil import utcnow
from goalsui.store import processes
from tests.base_kit import cli_argv
from tests.contract.test_scheduler_claims import bulk_at
from tests.daemon_kit import runner_config, wait_until
from tests.e2e.test_reliability_runner import alive, pids_with, reap

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
]


class PtyConsole:
    """``goalsui console`` in a pseudo-terminal; its screen output is drained meanwhile."""

    def __init__(self, kb: Path, state: Path) -> None:
        argv = cli_argv("console", kb=kb, state=state)
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
        pid, master = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal
            try:
                os.execve(sys.executable, argv, env)
            finally:
                os._exit(127)
        self.pid, self.master = pid, master
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.output = bytearray()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.status: int | None = None

    def _drain(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output.extend(data)

    def hang_up(self) -> None:
        """The terminal closes: the kernel sends SIGHUP to the console (session leader)."""
        self._stop.set()
        self._reader.join(5)
        os.close(self.master)

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = status
        return self.status is not None

    def kill(self) -> None:
        if not self.exited():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        if not self._stop.is_set():
            self._stop.set()
            self._reader.join(5)
            with contextlib.suppress(OSError):
                os.close(self.master)


def group_gone(pgid: int) -> bool:
    members = processes._members(pgid) or []
    return not [pid for pid, state, _ in members if state not in ("Z", "X")]


@pytest.mark.parametrize("how", ["terminal closed", "SIGHUP", "SIGTERM"])
def test_the_console_stops_and_records_its_runs_when_its_terminal_closes(
    how: str, empty_kb: Path, tmp_path: Path, make_service
) -> None:
    marker = f"goalsui-test-{uuid.uuid4().hex}"
    runner_config(empty_kb, ["{python}", "-c", "import time; time.sleep(300)", marker], "600s")
    svc = make_service(empty_kb)
    (intent_id,) = bulk_at(svc, 1, utcnow())
    console = PtyConsole(empty_kb, tmp_path / "state")
    try:
        wait_until(lambda: len(pids_with(marker)) == 1 or console.exited(), timeout=90)
        assert not console.exited(), console.output.decode("utf-8", "replace")[-2000:]
        (runner,) = pids_with(marker)
        wait_until(lambda: svc.runs.list(intent_id=intent_id)[0].pgid is not None, timeout=30)
        (run,) = svc.runs.list(intent_id=intent_id)
        assert run.status == "running"
        pgid = run.pgid
        assert pgid is not None and os.getpgid(runner) == pgid

        if how == "terminal closed":
            console.hang_up()
        else:
            os.kill(console.pid, getattr(signal, how))
        wait_until(console.exited, timeout=60)

        assert group_gone(pgid) and not alive(runner)
        (run,) = svc.runs.list(intent_id=intent_id)
        assert run.status in ("interrupted", "cancelled"), (run.status, run.reason)
        assert run.finished_at is not None
        assert run.reason == "interrupted: the scheduler stopped (shutdown)"
        intent = svc.intents.get(intent_id)
        assert intent.status != "firing" and intent.lease_owner is None
    finally:
        console.kill()
        reap(pids_with(marker))
