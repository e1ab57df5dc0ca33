"""Failure alerts: threshold, once per cooldown, auto-disable always, the command hook."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from goalsui.kb.layout import WorkerSeed
from goalsui.scheduler.alerts import Alert, maybe_alert
from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def failing(service: Service, intent: Intent, failures: int) -> tuple[Intent, IntentRun]:
    """Record a failed run and the failure count the scheduler would have set."""
    now = service.now()
    with service.store.write() as s:
        row = s.get(Intent, intent.id)
        assert row is not None
        row.consecutive_failures = failures
        row.last_error = "exit 1: upstream unreachable"
        s.add(row)
        run = IntentRun(
            intent_id=intent.id,
            status="failed",
            reason="exit 1: upstream unreachable",
            started_at=now,
            finished_at=now,
            exit_code=1,
        )
        s.add(run)
        s.flush()
    return service.intents.get(intent.id), run


def config(kb: Path, extra: str = "") -> None:
    (kb / "goalsui.yaml").write_text("alerts:\n  after: 2\n  cooldown: 1h\n" + extra)


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:
    config(empty_kb)
    return make_service(empty_kb, clock=clock)


@pytest.fixture
def thread_intent(svc: Service) -> Intent:
    thread = svc.threads.create("Ops")
    return svc.intents.create(
        title="Nightly sync",
        instruction="sync",
        kind="cron",
        schedule="0 2 * * *",
        thread_id=thread.id,
    )


async def test_alert_after_threshold_once_per_cooldown(
    svc: Service, thread_intent: Intent, clock
) -> None:
    intent, run = failing(svc, thread_intent, 1)
    assert await maybe_alert(svc, intent, run, auto_disabled=False) is None
    intent, run = failing(svc, thread_intent, 2)
    alert = await maybe_alert(svc, intent, run, auto_disabled=False)
    assert isinstance(alert, Alert)
    assert alert.intent_id == intent.id and alert.run_id == run.id and not alert.auto_disabled
    assert alert.message == (
        f"intent {intent.id} (Nightly sync) failed 2 times in a row; last: run {run.id} failed: exit 1: upstream unreachable."
    )
    messages = svc.threads.messages(thread_intent.thread_id)
    assert [m.content for m in messages] == [alert.message]
    assert messages[0].provenance == "Alert about: Nightly sync"
    journal = [j for j in svc.journal.recent() if j.action == "alert"]
    assert (
        len(journal) == 1 and journal[0].actor == "scheduler" and journal[0].detail == alert.message
    )
    # A third failure within the hour: no second alert.
    clock.advance(minutes=30)
    intent, run = failing(svc, thread_intent, 3)
    assert await maybe_alert(svc, intent, run, auto_disabled=False) is None
    # After the cooldown: alerts again.
    clock.advance(minutes=31)
    intent, run = failing(svc, thread_intent, 4)
    again = await maybe_alert(svc, intent, run, auto_disabled=False)
    assert again is not None and "failed 4 times in a row" in again.message
    assert svc.intents.get(intent.id).last_alert_at == clock.now
    assert len(svc.threads.messages(thread_intent.thread_id)) == 2


async def test_auto_disable_always_alerts(svc: Service, thread_intent: Intent, clock) -> None:
    intent, run = failing(svc, thread_intent, 4)
    assert await maybe_alert(svc, intent, run, auto_disabled=False) is not None
    clock.advance(seconds=10)  # well inside the cooldown
    intent, run = failing(svc, thread_intent, 5)
    alert = await maybe_alert(svc, intent, run, auto_disabled=True)
    assert alert is not None and alert.auto_disabled
    assert "auto-disabled after 5 consecutive failures" in alert.message
    assert f"goalsui intent resume {intent.id}" in alert.message


async def test_success_never_alerts(svc: Service, thread_intent: Intent) -> None:
    intent, run = failing(svc, thread_intent, 3)
    run.status = "ok"
    assert await maybe_alert(svc, intent, run, auto_disabled=False) is None


async def test_worker_alert_goes_to_the_goal_log(svc: Service) -> None:
    view = svc.goals.create(
        "Pulse",
        "t",
        [WorkerSeed("flaky", {"schedule": {"every": "1m"}, "runner": {"command": ["false"]}})],
    )
    intent, run = failing(svc, svc.workers.intent(view.goal_id, "flaky"), 2)
    alert = await maybe_alert(svc, intent, run, auto_disabled=False)
    assert alert is not None and alert.goal_id == view.goal_id and alert.worker == "flaky"
    log = (svc.kb.goal_dir(view.goal_id) / "log" / f"{svc.now():%Y-%m-%d}.md").read_text()
    assert (
        f"ALERT run {run.id}: {view.goal_id}/flaky (Pulse / flaky) failed 2 times in a row" in log
    )


async def test_alert_command_gets_the_alert_as_json(
    empty_kb: Path, make_service, clock, tmp_path: Path
) -> None:
    out = tmp_path / "alert.json"
    config(
        empty_kb,
        f'  command: ["{sys.executable}", "{SCRIPTS / "run_capture_stdin.py"}", "{out}"]\n',
    )
    svc = make_service(empty_kb, clock=clock)
    thread = svc.threads.create("Ops")
    intent = svc.intents.create(
        title="Sync", instruction="x", kind="cron", schedule="0 2 * * *", thread_id=thread.id
    )
    intent, run = failing(svc, intent, 2)
    alert = await maybe_alert(svc, intent, run, auto_disabled=False)
    assert alert is not None
    data = json.loads(out.read_text())
    assert data["intent_id"] == intent.id and data["run_id"] == run.id
    assert data["message"] == alert.message and data["auto_disabled"] is False
    assert data["at"] == clock.now.isoformat(timespec="seconds")


async def test_failing_alert_command_is_logged_not_raised(
    empty_kb: Path, make_service, clock, tmp_path: Path
) -> None:
    config(
        empty_kb,
        f'  command: ["{sys.executable}", "{SCRIPTS / "run_capture_stdin.py"}", "{tmp_path / "x"}", "7"]\n',
    )
    svc = make_service(empty_kb, clock=clock)
    thread = svc.threads.create("Ops")
    intent = svc.intents.create(
        title="Sync", instruction="x", kind="cron", schedule="0 2 * * *", thread_id=thread.id
    )
    intent, run = failing(svc, intent, 2)
    assert await maybe_alert(svc, intent, run, auto_disabled=False) is not None
    failed = [j for j in svc.journal.recent() if j.action == "alert command failed"]
    assert len(failed) == 1 and failed[0].detail == "exit 7"


def test_mark_alerted_is_a_compare_and_set(svc: Service, thread_intent: Intent, clock) -> None:
    hour = timedelta(hours=1)
    assert svc.runs.mark_alerted(thread_intent.id, clock.now, cooldown=hour) is True
    assert (
        svc.runs.mark_alerted(thread_intent.id, clock.now + timedelta(minutes=59), cooldown=hour)
        is False
    )
    assert svc.runs.mark_alerted(thread_intent.id, clock.now + hour, cooldown=hour) is True
    assert svc.runs.mark_alerted(thread_intent.id, clock.now + hour, cooldown=None) is True
