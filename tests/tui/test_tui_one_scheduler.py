"""One scheduler per KB: a console opened while ``goalsui daemon`` serves the KB watches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.widgets.status_bar import StatusBar
from tests.daemon_kit import Daemon, wait_until
from tests.tui_kit import settle, wait_for


def daemon_on(kb: Path, state: Path) -> Daemon:
    daemon = Daemon(kb, state)
    daemon.wait_ready()
    return daemon


async def test_console_watches_while_a_daemon_serves_the_kb(empty_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    Service.open(empty_kb, None, state).close()  # schema and index before the daemon
    daemon = daemon_on(empty_kb, state)
    service = Service.open(empty_kb, None, state, actor="operator")
    try:
        [info] = service.schedulers.live()
        assert (info.pid, info.kind) == (daemon.pid, "daemon")
        app = make_app(service, scheduler=True, watch=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(app, pilot)
            note = f"daemon pid {daemon.pid} (watching)"
            await wait_for(pilot, lambda: app.runtime.scheduler_state == note, what="watching note")
            assert app.runtime.scheduler is None  # no second scheduler
            bar = app.main.query_one(StatusBar)
            assert bar.info.scheduler == note
            assert f"scheduler daemon pid {daemon.pid}" in str(bar.render())
        # --scheduler forces one beside the daemon
        forced = make_app(service, scheduler=True, force_scheduler=True, watch=False)
        async with forced.run_test(size=(160, 48)) as pilot:
            await settle(forced, pilot)
            await wait_for(
                pilot, lambda: forced.runtime.scheduler_state == "running", what="forced scheduler"
            )
            assert forced.runtime.scheduler is not None
    finally:
        assert daemon.stop() == 0
        service.close()
    # once the daemon has stopped, its registration is gone and a console schedules again
    service = Service.open(empty_kb, None, state, actor="operator")
    try:
        assert service.schedulers.live() == []
        app = make_app(service, scheduler=True, watch=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(app, pilot)
            await wait_for(
                pilot, lambda: app.runtime.scheduler_state == "running", what="scheduler"
            )
    finally:
        service.close()


def test_a_killed_daemon_leaves_no_live_registration(empty_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    Service.open(empty_kb, None, state).close()
    daemon = daemon_on(empty_kb, state)
    service = Service.open(empty_kb, None, state)
    try:
        assert [s.pid for s in service.schedulers.live()] == [daemon.pid]
        daemon.kill()  # SIGKILL: its file stays, its lock goes with the process
        wait_until(lambda: service.schedulers.live() == [], 10)
        assert list((state / "schedulers").glob("*.json"))  # the leftover is ignored
    finally:
        service.close()


def test_console_cli_offers_scheduler_and_no_scheduler_not_both(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "goalsui", "console", "--scheduler", "--no-scheduler"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "not allowed with argument" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
