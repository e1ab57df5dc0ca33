"""Metrics and health: a real daemon serves /metrics, /healthz and /readyz; readiness
follows the database file; the collector reports spend; JSON logs are JSON."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from goalsui.ops.health import Readiness, tick_age
from goalsui.ops.metrics import make_registry
from goalsui.runners.base import TurnOutcome
from goalsui.runners.turn import run_turn
from goalsui.service import Service
from goalsui.store.models import Intent
from tests.base_kit import run_cli
from tests.cost_kit import AGENT, SCRIPTS, agent_worker, record, start_run
from tests.daemon_kit import Daemon, wait_until

PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text, or None when it is absent."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^(\w+)(\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if found == labels:
            return float(m.group(4))
    return None


def due_now(svc: Service, intent: Intent, *, back: timedelta = timedelta(0)) -> None:
    with svc.store.write() as s:
        row = s.get(Intent, intent.id)
        assert row is not None
        row.next_run_at = svc.now() - back
        s.add(row)


def seed(svc: Service) -> None:
    """One intent per run status: ok, silent, failed, timeout, skipped, missed."""
    thread = svc.threads.create("ops")

    def make(title: str, argv: list[str], schedule: str = "0 3 * * *", **extra: object) -> Intent:
        return svc.intents.create(
            title=title,
            instruction="x",
            kind="cron",
            schedule=schedule,
            timezone="UTC",
            thread_id=thread.id,
            runner={"command": argv},
            **extra,
        )

    due_now(svc, make("ok", [PY, AGENT, "generic", "0.5", "10", "2"]))
    due_now(svc, make("silent", [PY, str(SCRIPTS / "run_silent.py")]))
    due_now(svc, make("failed", [PY, str(SCRIPTS / "run_fail.py"), "2"]))
    due_now(svc, make("timeout", [PY, "-c", "import time; time.sleep(30)"], timeout="1s"))
    hours = {"start": "00:00", "end": "00:01", "timezone": "Pacific/Kiritimati"}
    quiet = make("quiet", [PY, str(SCRIPTS / "run_silent.py")], active_hours=hours)
    due_now(svc, quiet)
    # a yearly schedule overdue by days: recorded missed, then caught up once (its latest
    # occurrence an hour ago, inside the catch-up limit, whatever the time of day the test runs)
    last = svc.now() - timedelta(hours=1)
    yearly = f"{last.minute} {last.hour} {last.day} {last.month} *"
    due_now(svc, make("missed", ["true"], schedule=yearly), back=timedelta(days=3))


def test_a_real_daemon_serves_metrics_health_and_readiness(
    empty_kb: Path, tmp_path: Path, make_service
) -> None:
    svc = make_service(empty_kb)
    seed(svc)
    db_file = svc.state_dir / "goalsui.db"
    svc.close()
    port = free_port()
    daemon = Daemon(empty_kb, tmp_path / "state", "--metrics-port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        daemon.wait_ready()
        assert get(f"{base}/healthz") == (200, "ok\n")

        def scraped() -> str:
            return get(f"{base}/metrics")[1]

        statuses = ("ok", "silent", "failed", "timeout", "skipped", "missed")

        def settled() -> bool:
            text = scraped()
            if not all(sample(text, "goalsui_runs_total", status=s, kind="cron") for s in statuses):
                return False
            # the missed occurrence's catch-up is the second ok; it may land a moment later
            return (sample(text, "goalsui_runs_total", status="ok", kind="cron") or 0) >= 2

        wait_until(settled, timeout=60)
        text = scraped()
        counts = {s: sample(text, "goalsui_runs_total", status=s, kind="cron") for s in statuses}
        # failures are retried meanwhile; the missed yearly occurrence is caught up once
        assert counts["missed"] == 1.0 and counts["ok"] == 2.0, counts
        assert all(counts[s] >= 1.0 for s in statuses), counts
        assert sample(text, "goalsui_missed_total") == 1.0
        assert sample(text, "goalsui_scheduler_up") == 1.0
        assert sample(text, "goalsui_intents", status="active") == 6.0
        executed = sample(text, "goalsui_run_duration_seconds_count")
        assert executed is not None and executed >= 5  # ok (2), silent, failed, timeout
        assert sample(text, "goalsui_run_duration_seconds_bucket", le="+Inf") == executed
        late = sample(text, "goalsui_fire_lateness_seconds_count")
        assert late is not None and late >= 5
        assert "# TYPE goalsui_run_duration_seconds histogram" in text
        assert "# TYPE goalsui_tokens_total counter" in text
        # the usage the "ok" agent reported went through the daemon's outcome writer
        assert sample(text, "goalsui_tokens_total", direction="in") == 10.0
        assert sample(text, "goalsui_tokens_total", direction="out") == 2.0
        assert sample(text, "python_gc_objects_collected_total", generation="0") is None
        assert get(f"{base}/readyz") == (200, "ready\n")

        # the database file moved away, then a directory in its place: not ready
        moved = db_file.with_name("moved.db")
        os.rename(db_file, moved)
        try:
            status, body = get(f"{base}/readyz")
            assert status == 503 and body.startswith("not ready: the database does not answer")
            assert body.count("\n") == 1
            db_file.mkdir()
            status, body = get(f"{base}/readyz")
            assert status == 503 and "database" in body
            db_file.rmdir()
        finally:
            os.rename(moved, db_file)
        assert get(f"{base}/readyz") == (200, "ready\n")
        assert get(f"{base}/healthz")[0] == 200
    finally:
        assert daemon.stop() == 0, "\n".join(daemon.lines)


async def test_the_collector_reports_cost_and_tokens_per_goal_and_worker(
    empty_kb: Path, make_service, clock
) -> None:
    svc = make_service(empty_kb, clock=clock)
    intent = agent_worker(svc, "claude", "0.75", "300", "40")
    for _ in range(2):
        run = start_run(svc, intent)
        record(svc, run, await run_turn(svc, intent, run, cancel=asyncio.Event()), seconds=7)
    unknown = agent_worker(svc, "none", "0", "0", "0", name="mute")
    run = start_run(svc, unknown)
    record(svc, run, await run_turn(svc, unknown, run, cancel=asyncio.Event()))
    skipped = start_run(svc, intent)
    record(svc, skipped, TurnOutcome("skipped", reason="budget: spent", skipped=True))
    text = generate_latest(make_registry(svc, lambda: False, lambda: False)).decode()
    assert sample(text, "goalsui_budget_skipped_total") == 1.0
    assert sample(text, "goalsui_cost_usd_total", goal=intent.goal_id, worker="coder") == 1.5
    # a run that reported nothing is not a zero-cost spender
    assert sample(text, "goalsui_cost_usd_total", goal=intent.goal_id, worker="mute") is None
    assert sample(text, "goalsui_tokens_total", direction="in") == 600
    assert sample(text, "goalsui_tokens_total", direction="out") == 80
    assert sample(text, "goalsui_scheduler_up") == 0.0
    assert sample(text, "goalsui_run_duration_seconds_bucket", le="5.0") == 1.0
    assert sample(text, "goalsui_run_duration_seconds_bucket", le="15.0") == 3.0
    assert sample(text, "goalsui_run_duration_seconds_sum") == pytest.approx(16.0, abs=0.01)


class _Tick:
    def __init__(self, monotonic: float) -> None:
        self.monotonic = monotonic


class _Scheduler:
    def __init__(self, state: str, last_tick: object = None) -> None:
        self.state = state
        self.last_tick = last_tick


async def test_readiness_needs_a_running_scheduler_that_ticked_lately(
    empty_kb: Path, make_service
) -> None:
    import time

    svc = make_service(empty_kb)
    now = time.monotonic()
    assert await Readiness(svc, _Scheduler("running"), max_quiet=2).problem() is None
    fresh = Readiness(svc, _Scheduler("running", _Tick(now)), max_quiet=2)
    assert await fresh.problem() is None
    stale = Readiness(svc, _Scheduler("running", _Tick(now - 10)), max_quiet=2)
    assert "last ticked 10s ago" in (await stale.problem() or "")
    broken = Readiness(svc, _Scheduler("error: claiming failed\nagain"), max_quiet=2)
    assert await broken.problem() == "the scheduler is error: claiming failed again"
    assert tick_age(_Scheduler("running", "garbage"), now) is None


def test_daemon_json_logs_and_bad_flags(empty_kb: Path, tmp_path: Path) -> None:
    for bad, words in (
        (["--metrics-port", "0"], "--metrics-port must be between 1 and 65535"),
        (["--metrics-port", "7000", "--hooks-port", "7000"], "must differ"),
        (["--log-format", "xml"], "invalid choice"),
    ):
        proc = run_cli("daemon", *bad, kb=empty_kb, state=tmp_path / "s", timeout=60)
        assert proc.returncode != 0 and words in proc.stderr and "Traceback" not in proc.stderr
    daemon = Daemon(empty_kb, tmp_path / "s", "--log-format", "json")
    try:
        daemon.wait_ready()
    finally:
        assert daemon.stop() == 0
    records = [json.loads(line) for line in daemon.lines if line.strip()]
    assert records and all({"ts", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["message"].startswith("goalsui daemon:") for r in records)
