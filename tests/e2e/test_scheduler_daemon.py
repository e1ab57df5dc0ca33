"""Real ``goalsui daemon`` processes on one SQLite file: exactly once, kill -9 recovery, clean stop."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.store import doorbell
from tests.base_kit import run_cli
from tests.daemon_kit import Daemon, add_due_now, alive, runner_config, wait_until

pytestmark = pytest.mark.slow
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_two_daemons_run_500_intents_exactly_once(
    empty_kb, state, make_service: Callable[..., Service]
):
    runner_config(empty_kb, ["true"])
    svc = make_service(empty_kb)
    daemons = [Daemon(empty_kb, state, "--max-concurrency", "8") for _ in range(2)]
    try:
        for d in daemons:
            d.wait_ready()
        ids = add_due_now(svc, 500)
        wait_until(lambda: svc.overview.summary()["intents"].get("done", 0) == 500)
    finally:
        codes = [d.stop() for d in daemons]
    assert codes == [0, 0], "\n".join(daemons[0].lines + daemons[1].lines)
    runs = svc.runs.list(limit=10_000)
    assert Counter(r.intent_id for r in runs) == Counter(ids)  # one run per intent
    assert {r.status for r in runs} == {"ok"}
    assert len({r.owner for r in runs}) == 2, "both daemons took part"
    started = [line for d in daemons for line in d.lines if " started: intent " in line]
    finished = [line for d in daemons for line in d.lines if " ok in " in line]
    assert len(started) == len(finished) == 500


def test_kill_9_then_restart_recovers_in_flight_runs(empty_kb, state, tmp_path, make_service):
    piddir = tmp_path / "pids"
    piddir.mkdir()
    runner_config(empty_kb, ["{python}", str(SCRIPTS / "sched_sleep.py"), str(piddir), "60"])
    svc = make_service(empty_kb)
    first = Daemon(empty_kb, state)
    first.wait_ready()
    ids = add_due_now(svc, 5)
    wait_until(lambda: len(svc.runs.running()) == 5 and len(list(piddir.glob("*.pid"))) == 5)
    in_flight = {r.id: r.intent_id for r in svc.runs.running()}
    first.kill()  # SIGKILL: no chance to record anything
    assert {i.status for i in svc.intents.list()} == {"firing"}
    runner_config(empty_kb, ["sleep", "0"])  # the restarted daemon's retries succeed
    second = Daemon(empty_kb, state)
    try:
        second.wait_ready()
        wait_until(lambda: {i.status for i in svc.intents.list()} == {"done"})
    finally:
        assert second.stop() == 0, "\n".join(second.lines)
    for run_id, intent_id in in_flight.items():
        run = svc.runs.get(run_id)
        assert run.status == "interrupted" and "lease expired" in run.reason
        after = [r for r in svc.runs.list(intent_id=intent_id) if r.id != run_id]
        assert [(r.status, r.trigger) for r in after] == [("ok", "retry")]
    assert sorted(in_flight.values()) == sorted(ids)
    assert not any(i.status == "firing" for i in svc.intents.list())
    pids = [int(p.read_text()) for p in piddir.glob("*.pid")]
    wait_until(lambda: not any(alive(pid) for pid in pids), timeout=10)  # orphans exited


def test_sigterm_gives_running_runs_their_grace_and_records_them(
    empty_kb, state, tmp_path, make_service
):
    piddir = tmp_path / "pids"
    piddir.mkdir()
    runner_config(empty_kb, ["{python}", str(SCRIPTS / "sched_sleep.py"), str(piddir), "60"])
    svc = make_service(empty_kb)
    daemon = Daemon(empty_kb, state, "--grace-seconds", "1")
    daemon.wait_ready()
    (intent_id,) = add_due_now(svc, 1)
    wait_until(lambda: len(list(piddir.glob("*.pid"))) == 1)
    (pid,) = [int(p.read_text()) for p in piddir.glob("*.pid")]
    assert daemon.stop() == 0
    (run,) = svc.runs.list(intent_id=intent_id)
    assert (run.status, run.reason) == (
        "interrupted",
        "interrupted: the scheduler stopped (shutdown)",
    )
    assert svc.intents.get(intent_id).status == "active"  # the retry rule: it runs again later
    assert not alive(pid)
    assert any("stopping: 1 running run(s)" in line for line in daemon.lines)
    assert daemon.lines[-1].endswith("stopped")


def test_two_idle_daemons_leave_each_other_asleep(empty_kb, state, make_service):
    """An empty claim step announces nothing, so idle daemons do not answer each other's
    steps with their own (a bell of ours in the shared SQLite file's wake folder hears
    nothing)."""
    runner_config(empty_kb, ["true"])
    svc = make_service(empty_kb)
    svc.intents.create(title="far", instruction="x", kind="at", schedule="2099-01-01T00:00:00Z")
    folder = doorbell.wake_dir(svc.store.engine)
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    bell = doorbell.Bell(folder)
    bell.open()
    daemons = [Daemon(empty_kb, state) for _ in range(2)]
    try:
        for d in daemons:
            d.wait_ready()
        time.sleep(3)  # start-up steps and their announcements are over
        bell.origins()
        time.sleep(8)  # several heartbeats and sweeps of each daemon
        assert bell.origins() == [], "an idle daemon announced a change"
        add_due_now(svc, 1)  # a writer's announcement still wakes them
        wait_until(lambda: svc.overview.summary()["intents"].get("done", 0) == 1, timeout=20)
    finally:
        bell.close()
        codes = [d.stop() for d in daemons]
    assert codes == [0, 0]


def test_daemon_rejects_bad_options_in_one_line(empty_kb, state):
    res = run_cli("daemon", "--lease-seconds", "0", kb=empty_kb, state=state, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        "goalsui: error: --lease-seconds must be between 0.1 and 3600"
    ]


def test_daemon_with_hooks_port_fires_event_intents(empty_kb, state, make_service):
    import socket
    import urllib.request

    from goalsui.hooks.signing import signed_headers

    (empty_kb / "goalsui.yaml").write_text(
        'runner:\n  command: ["true"]\nhooks:\n  sources:\n    ci:\n      secret_env: SCHED_TEST_SECRET\n'
    )
    svc = make_service(empty_kb)
    intent = svc.intents.create(title="on ci", instruction="look", kind="event", event_source="ci")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ["SCHED_TEST_SECRET"] = "s3cret"
    try:
        daemon = Daemon(empty_kb, state, "--hooks-port", str(port))
    finally:
        del os.environ["SCHED_TEST_SECRET"]
    try:
        daemon.wait_ready()
        body = json.dumps({"branch": "main"}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/hooks/ci",
            data=body,
            method="POST",
            headers=signed_headers("s3cret", body, "delivery-1"),
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status in (200, 202)
        wait_until(lambda: [r.status for r in svc.runs.list(intent_id=intent.id)] == ["ok"])
    finally:
        assert daemon.stop() == 0, "\n".join(daemon.lines)
    (run,) = svc.runs.list(intent_id=intent.id)
    assert run.trigger == "event" and run.event_id is not None
    assert any("listening for event hooks" in line for line in daemon.lines)
