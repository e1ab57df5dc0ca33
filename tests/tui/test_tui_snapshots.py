"""Snapshots of the console (pytest-textual-snapshot): fixed clock, KB at a fixed path,
no watchers, no scheduler, 160x48, times shown in UTC.

Update after a reviewed change: ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from tests.base_kit import FakeClock
from tests.tui_kit import NIGHT, PULSE, add_run, open_demo, settle, worker_intent

ROOT = Path("/tmp/goalsui-snapshot")  # fixed: paths appear on screen
SIZE = (160, 48)
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

REPORT = """# Nightshift report, night of 2026-12-01

From 2026-12-01 12:00 to 2026-12-02 07:30 (Europe/Berlin); compiled 2026-12-02 07:30 +0100.

## Summary

- 5 runs: 3 ok (runs 1, 2, 4), 1 failed (run 3), 1 missed (run 5).
- Most important: nightshift/gardener failed: exit 2, lint tool missing (run 3, log line 14).

## Timeline

| worker | run | trigger | planned | started | duration | status | source |
| --- | ---: | --- | --- | --- | ---: | --- | --- |
| commander | 1 | schedule | 20:00:00 | 20:00:00 | 41s | ok | run 1, workers/commander/outbox/20261201T190000Z-1.md |
| scout | 2 | schedule | 20:30:00 | 20:30:00 | 1m35s | ok | run 2, workers/scout/outbox/20261201T193000Z-2.md |
| librarian | 4 | schedule | 23:00:00 | 23:00:00 | 12s | ok | run 4, log/2026-12-01.md:6 |
| auditor | 5 | schedule | 02:30:00 | - | - | missed | run 5 |
| gardener | 3 | schedule | 05:00:00 | 05:04:00 | 30s | failed: exit 2 | run 3, log line 14 |

## Findings

### nightshift/scout (run 2, outbox/2026-12-01T2030-2.md)

> Three issues triaged; one needs a human: the flaky upload test on main.
"""


@pytest.fixture
def scene(utc: None) -> Iterator[tuple[Service, FakeClock]]:
    """The demo KB at a fixed path with a morning's worth of runs.

    The path is shared by this file and test_tui_snapshots_sizes.py, which pytest-xdist
    may run at the same time on two workers: a lock beside it lets one scene at a time
    exist."""
    with open(f"{ROOT}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield from _scene()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _scene() -> Iterator[tuple[Service, FakeClock]]:
    shutil.rmtree(ROOT, ignore_errors=True)
    clock = FakeClock(NOW)
    service = open_demo(ROOT / "kb", ROOT / "state", clock)
    pulse = worker_intent(service, PULSE, "pulse")
    flaky = worker_intent(service, PULSE, "flaky")
    for minutes in (55, 45, 35, 25, 15, 5):
        add_run(service, pulse, "ok", NOW - timedelta(minutes=minutes), output="pulse ok\n")
    for minutes, reason in (
        (50, "exit 1"),
        (30, "exit 1"),
        (10, "exit 1: upstream status endpoint unreachable"),
    ):
        add_run(
            service,
            flaky,
            "failed",
            NOW - timedelta(minutes=minutes),
            reason=reason,
            output="checking ...\n",
        )
    add_run(
        service,
        pulse,
        "running",
        NOW - timedelta(seconds=12),
        output="pulse 12:00:00 +00:00, run 10\ngoals in the KB: 4 (active 4)\n",
    )
    auditor = worker_intent(service, NIGHT, "auditor")  # run 5 of the morning report
    add_run(
        service,
        auditor,
        "missed",
        datetime(2026, 12, 2, 1, 30, tzinfo=UTC),  # 02:30 in Berlin
        seconds=0,
        reason="overdue by more than the catch-up limit (24h) at start",
    )
    yield service, clock
    service.close()


def add_night(service: Service) -> None:
    # reports are named by the night's start: 2026-12-01.md is read on the morning of the 2nd
    (service.kb.root / NIGHT / "reports" / "2026-12-01.md").write_text(REPORT)
    (service.kb.root / NIGHT / "reports" / "2026-11-29.md").write_text(
        "# Nightshift report, night of 2026-11-29\n"
    )
    night = [
        ("commander", "ok", datetime(2026, 12, 1, 19, 0), 0, 41),
        ("scout", "ok", datetime(2026, 12, 1, 19, 30), 0, 95),
        ("librarian", "ok", datetime(2026, 12, 1, 22, 0), 0, 12),
        ("gardener", "failed", datetime(2026, 12, 2, 4, 0), 240, 30),
    ]
    for worker, status, planned, late, seconds in night:
        planned = planned.replace(tzinfo=UTC)
        add_run(
            service,
            worker_intent(service, NIGHT, worker),
            status,
            planned + timedelta(seconds=late),
            planned=planned,
            seconds=seconds,
            reason="exit 2" if status == "failed" else None,
        )


def run_before(select: str | None = None, keys: tuple[str, ...] = ()):
    async def before(pilot) -> None:
        app = pilot.app
        await settle(app, pilot)
        if select:
            app.main.goals.select_key(select)
            await settle(app, pilot)
        for key in keys:
            await pilot.press(key)
            await settle(app, pilot)
        await pilot.pause(0.1)

    return before


def console(service: Service, clock: FakeClock):
    return make_app(service, scheduler=False, watch=False, clock=clock, theme="goalsui-dark")


def test_main_screen(scene, snap_compare) -> None:
    service, clock = scene
    app = console(service, clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before(f"worker/{PULSE}/pulse"))


def test_failures_screen(scene, snap_compare) -> None:
    service, clock = scene
    flaky = worker_intent(service, PULSE, "flaky")
    from goalsui.store.models import Intent

    with service.store.write() as s:
        row = s.get(Intent, flaky)
        row.status, row.last_error = (
            "failed",
            "flaky: upstream status endpoint unreachable (5 failures in a row)",
        )
        row.updated_at = NOW - timedelta(minutes=9)
        s.add(row)
    app = console(service, clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before(keys=("F",)))


def test_reports_screen(scene, snap_compare) -> None:
    service, clock = scene
    add_night(service)
    app = console(service, clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before(keys=("M",)))


def test_kb_error_badge(scene, snap_compare) -> None:
    service, clock = scene
    definition = service.kb.root / PULSE / "workers" / "flaky" / "definition.yaml"
    definition.write_text("schedule:\n  every: 1m\n  bogus: [unclosed\n")
    service.index.sync([PULSE])
    app = console(service, clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before(f"goal/{PULSE}"))
