"""Runner processes never outlive their run or the scheduler that started them (issue 21.1).

Real processes throughout: a background child that let go of the pipes, a launcher
killed with SIGKILL, a real ``goalsui daemon`` killed with ``kill -9``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from goalsui.runners.command import run_command
from goalsui.runners.lifeline import child_setup
from goalsui.runners.turn import run_turn
from tests.daemon_kit import Daemon, add_due_now, runner_config, wait_until
from tests.e2e.test_runner_turn import CONFIG, SCRIPTS, start_run, worker

linux_only = pytest.mark.skipif(child_setup() is None, reason="PR_SET_PDEATHSIG is Linux-only")


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (PID 1 here may never reap orphans)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return data[data.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def pids_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd and alive(int(entry)):
            found.append(int(entry))
    return found


def reap(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_background_child_with_redirected_output_dies_when_the_run_ends(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "bg.pid"
    script = f"sleep 300 >/dev/null 2>&1 </dev/null & echo $! > {pidfile}; echo started"
    result = await run_command(["sh", "-c", script], timeout=60, log_path=tmp_path / "run.log")
    pid = int(pidfile.read_text())
    try:
        assert result.status == "ok" and result.stdout == "started\n"
        assert not alive(pid), "the run's background child outlived the run"
        assert "stopping the processes it left" in (tmp_path / "run.log").read_text()
    finally:
        reap([pid])


async def test_a_failed_run_takes_its_background_children_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    script = (
        # the background sleep may not exist yet when pgrep first looks: look until it does
        "(sleep 300 >/dev/null 2>&1 &) ; "
        f"for i in $(seq 100); do pgrep -g 0 sleep > {pidfile} && break; sleep 0.05; done; exit 4"
    )
    result = await run_command(["sh", "-c", script], timeout=60)
    pids = [int(p) for p in pidfile.read_text().split()]
    try:
        assert result.status == "failed" and result.exit_code == 4
        assert pids and not any(alive(p) for p in pids)
    finally:
        reap(pids)


async def test_on_spawn_gets_the_process_group_of_the_run(tmp_path: Path) -> None:
    seen: list[int] = []
    code = "import os; print(os.getpgid(0), os.getppid())"
    result = await run_command([sys.executable, "-c", code], on_spawn=seen.append)
    pgid, parent = (int(x) for x in result.stdout.split())
    # its own group, led by the runner's supervisor (Linux) or by the runner itself
    assert seen == [pgid]
    assert parent == pgid or child_setup() is None


async def test_a_failing_on_spawn_callback_does_not_stop_the_run() -> None:
    def broken(pgid: int) -> None:
        raise RuntimeError("database gone")

    result = await run_command(["sh", "-c", "echo fine"], on_spawn=broken)
    assert (result.status, result.stdout) == ("ok", "fine\n")


LAUNCHER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from goalsui.runners.command import run_command

    async def main() -> None:
        ready = Path(sys.argv[1])
        await run_command(
            ["sleep", "300"], on_spawn=lambda pgid: ready.write_text(str(pgid)), timeout=600
        )

    asyncio.run(main())
    """
)


@linux_only
def test_the_runner_dies_when_its_launcher_is_killed(tmp_path: Path) -> None:
    ready = tmp_path / "pgid"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(ready)])
    try:
        wait_until(lambda: ready.exists() and ready.read_text() != "", timeout=60)
        runner = int(ready.read_text())
        assert alive(runner)
        launcher.kill()  # SIGKILL: no finally, no atexit, no cleanup in the launcher
        launcher.wait(10)
        wait_until(lambda: not alive(runner), timeout=10)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        if ready.exists() and ready.read_text():
            reap([int(ready.read_text())])


@linux_only
@pytest.mark.slow
def test_kill_9_of_a_daemon_takes_its_runner_with_it(empty_kb, tmp_path, make_service) -> None:
    marker = f"goalsui-test-{uuid.uuid4().hex}"
    # the marker rides in argv, so the runner can be found in /proc whatever its pid
    runner_config(empty_kb, ["{python}", "-c", "import time; time.sleep(300)", marker], "600s")
    svc = make_service(empty_kb)
    daemon = Daemon(empty_kb, tmp_path / "state")
    try:
        daemon.wait_ready()
        add_due_now(svc, 1)
        wait_until(lambda: len(pids_with(marker)) == 1, timeout=60)
        (runner,) = pids_with(marker)
        daemon.kill()
        # A process killed by a signal is gone from view (its command line reads empty)
        # a moment before it is a zombie: wait for the runner itself, not its marker.
        wait_until(lambda: not alive(runner), timeout=10)
        assert not pids_with(marker)
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()
        reap(pids_with(marker))


def _owner_pid(owner: str | None) -> int:
    """The pid in a scheduler owner ``host:pid:random``."""
    return int(str(owner).rsplit(":", 2)[1])


class RunnerCensus:
    """Samples the process table in a thread: the most runners of one marker seen at once."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.most = 0
        self.samples = 0
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                pids = pids_with(self.marker)
            except (OSError, IndexError):  # a process vanished in the middle of the scan
                continue
            self.seen.update(pids)
            self.most = max(self.most, len(pids))
            self.samples += 1
            time.sleep(0.001)  # a scan of /proc takes longer: still no gap worth a process

    def watching(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@linux_only
@pytest.mark.slow
def test_kill_9_of_one_of_two_daemons_never_runs_the_intent_twice_at_once(
    db_url, empty_kb, tmp_path, make_service
) -> None:
    """Two daemons on one database; the one running a sleeping intent gets ``kill -9``.

    While the other recovers its lease and retries, the process table is sampled without
    a pause: at no moment do two runner processes of the intent exist. The killed run is
    recorded once (``interrupted``), the retry once (``ok``).
    """
    marker = f"goalsui-test-{uuid.uuid4().hex}"
    flag = tmp_path / "first-attempt"
    # The first attempt sleeps (to be killed with its daemon); a retry ends quickly.
    script = (
        "import os, sys, time; flag = sys.argv[1]; first = not os.path.exists(flag); "
        "open(flag, 'a').close(); time.sleep(300 if first else 1)"
    )
    runner_config(empty_kb, ["{python}", "-c", script, str(flag), marker], "600s")
    svc = make_service(empty_kb, db_url)
    state = tmp_path / "state"
    daemons = [Daemon(empty_kb, state, db=db_url) for _ in range(2)]
    census = None
    try:
        for daemon in daemons:
            daemon.wait_ready()
        (intent_id,) = add_due_now(svc, 1)
        wait_until(lambda: len(pids_with(marker)) == 1, timeout=60)
        (first_runner,) = pids_with(marker)
        (first,) = svc.runs.running()
        (victim,) = [d for d in daemons if d.pid == _owner_pid(first.owner)]
        (survivor,) = [d for d in daemons if d is not victim]
        census = RunnerCensus(marker)
        wait_until(lambda: first_runner in census.seen, timeout=30)  # watching before the kill
        # Killed before its program marked the flag (a slow start under load), the first
        # attempt would leave the retry to sleep 300 s as the first one: kill it after.
        wait_until(flag.exists, timeout=30)
        victim.kill()  # kill -9: no chance to stop or record its run
        wait_until(lambda: svc.intents.get(intent_id).status == "done", timeout=90)
        assert census.watching(), "the census stopped sampling"
        census.stop()
        assert survivor.proc.poll() is None, "\n".join(survivor.lines)
    finally:
        if census is not None:
            census.stop()
        for daemon in daemons:
            if daemon.proc.poll() is None:
                daemon.stop()
        reap(pids_with(marker))
    assert census.samples > 100, census.samples  # the table was watched throughout
    assert census.most == 1, f"{census.most} runners of one intent at once"
    assert len(census.seen) == 2 and first_runner in census.seen  # the first, then the retry
    assert not alive(first_runner)
    runs = sorted(svc.runs.list(intent_id=intent_id), key=lambda r: r.id)
    assert [(r.id, r.status) for r in runs] == [(first.id, "interrupted"), (runs[1].id, "ok")]
    assert runs[1].trigger == "retry"
    assert _owner_pid(runs[1].owner) == survivor.pid


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_no_file_descriptors_left_is_an_infrastructure_failure(
    empty_kb: Path, make_service, clock
) -> None:
    (empty_kb / "goalsui.yaml").write_text(CONFIG % (SCRIPTS / "run_echo_stdin.py"))
    svc = make_service(empty_kb, clock=clock)
    intent = worker(svc, "run_echo_stdin.py")
    run = start_run(svc, intent)
    await asyncio.to_thread(svc.runs.log_path, run.id)  # the state dir exists already
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cancel = asyncio.Event()
    resource.setrlimit(resource.RLIMIT_NOFILE, (_open_fds() + 2, hard))
    try:
        outcome = await run_turn(svc, intent, run, cancel=cancel)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert outcome.status == "failed"
    assert outcome.infrastructure is True
    assert "no file descriptors left" in (outcome.reason or "")
