"""Runs that need review: the operator's retry and dismiss (issue 21 item 2).

An interrupted run of a ``review`` intent (an agent preset by default) is held: the run
is marked ``needs_review`` and its intent paused. ``goalsui runs retry RUN`` starts the
fire again now; ``goalsui runs dismiss RUN`` resumes the schedule from now without
re-running it. The run rows come from a real claim by a scheduler that "dies" and a
real recovery, as in ``test_store_recovery.py``.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from goalsui.service import Service
from goalsui.store.models import Intent
from tests.base_kit import FakeClock, run_cli
from tests.claims_kit import claims_for

DEAD = "dead-scheduler"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def _intent(svc: Service, clock: FakeClock, kind: str = "cron", **extra: Any) -> int:
    schedule = "0 * * * *" if kind == "cron" else clock.now.isoformat()
    row = Intent(
        title=str(extra.pop("title", "agent job")),
        instruction="x",
        kind=kind,
        schedule=schedule,
        next_run_at=clock.now,
        created_at=clock.now,
        updated_at=clock.now,
        runner={"agent": "claude"},
        **extra,
    )
    with svc.store.write() as s:
        s.add(row)
        s.flush()
        return row.id


def _held(svc: Service, clock: FakeClock) -> dict[int, int]:
    """Claim every due intent as a scheduler that dies, then recover: ``{intent: run}``."""
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner=DEAD,
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=50,
    )
    later = clock.advance(seconds=60)
    claims_for(svc.store.engine).recover(
        owner="new-scheduler",
        now=later,
    )
    return {c.intent["id"]: c.run["id"] for c in res.fired}


def cli(svc: Service, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        *args,
        kb=svc.kb.root,
        state=svc.state_dir,
        extra_env={"GOALSUI_DB": svc.db_url},
        input="",  # no terminal: stdin at its end
    )


def _awaiting(svc: Service) -> list[int]:
    """Ids of the runs awaiting review, newest first (as the Failures list marks them)."""
    return [r.id for r in svc.runs.list(limit=1000) if r.needs_review]


def test_retry_starts_the_fire_again_and_clears_the_mark(db_url, empty_kb, make_service, clock):
    svc = make_service(empty_kb, db_url, clock=clock)
    intent_id = _intent(svc, clock)
    (run_id,) = _held(svc, clock).values()
    assert _awaiting(svc) == [run_id]
    assert svc.intents.get(intent_id).status == "paused"

    intent = svc.runs.review_retry(run_id)
    assert (intent.status, intent.next_run_at, intent.pending_trigger) == (
        "active",
        clock.now,
        "retry",
    )
    assert intent.last_error is None
    run = svc.runs.get(run_id)
    assert (run.status, run.needs_review, run.dismissed) == ("interrupted", False, True)
    assert _awaiting(svc) == []
    assert run_id not in {r.id for r in svc.runs.list(failed=True)}
    actions = [j.action for j in svc.journal.recent()]
    assert "run retried after review" in actions
    # The next claim fires it, as a retry of the same fire (no fire counted).
    fires = svc.intents.get(intent_id).fires
    again = _held(svc, clock)
    assert intent_id in again and svc.intents.get(intent_id).fires == fires


def test_dismiss_resumes_from_now_without_running(db_url, empty_kb, make_service, clock):
    svc = make_service(empty_kb, db_url, clock=clock)
    cron = _intent(svc, clock, title="hourly agent")
    once = _intent(svc, clock, kind="at", title="one-shot agent")
    runs = _held(svc, clock)

    intent = svc.runs.review_dismiss(runs[cron])
    assert intent.status == "active" and intent.last_error is None
    assert intent.pending_trigger is None
    assert intent.next_run_at is not None and intent.next_run_at > clock.now
    assert intent.next_run_at.minute == 0  # the next hour, not the interrupted fire
    assert svc.runs.get(runs[cron]).needs_review is False

    done = svc.runs.review_dismiss(runs[once])
    assert (done.status, done.next_run_at) == ("done", None)
    assert _awaiting(svc) == []
    assert "run dismissed after review" in [j.action for j in svc.journal.recent()]


def test_a_run_not_awaiting_review_is_refused_and_nothing_changes(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    plain = _intent(svc, clock, on_interrupt="retry")
    (run_id,) = _held(svc, clock).values()
    before = svc.intents.get(plain)
    for decide in (svc.runs.review_retry, svc.runs.review_dismiss):
        with pytest.raises(Exception, match=f"run {run_id} is not awaiting review"):
            decide(run_id)
    after = svc.intents.get(plain)
    assert (after.status, after.next_run_at, after.pending_trigger) == (
        before.status,
        before.next_run_at,
        before.pending_trigger,
    )
    assert svc.runs.get(run_id).dismissed is False


def test_retrying_or_resuming_the_intent_settles_its_review(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    first = _intent(svc, clock, title="retried")
    second = _intent(svc, clock, title="resumed")
    runs = _held(svc, clock)
    svc.intents.retry(first)
    svc.intents.resume(second)
    for intent_id in (first, second):
        assert svc.runs.get(runs[intent_id]).needs_review is False
        assert svc.intents.get(intent_id).last_error is None
    # The console's plain "dismiss" on a held run is the review's dismiss.
    third = _intent(svc, clock, title="dismissed")
    run_id = _held(svc, clock)[third]
    assert svc.intents.get(third).status == "paused"
    svc.runs.dismiss(run_id)
    assert svc.intents.get(third).status == "active"


def test_the_command_line_decides_and_reports(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    retried = _intent(svc, clock, title="retried")
    dismissed = _intent(svc, clock, title="dismissed")
    runs = _held(svc, clock)

    listed = json.loads(cli(svc, "runs", "--failed", "--json").stdout)
    assert {r["id"]: r["needs_review"] for r in listed} == {
        runs[retried]: True,
        runs[dismissed]: True,
    }
    table = cli(svc, "runs")
    assert table.returncode == 0 and table.stdout.count("needs review") == 2
    shown = cli(svc, "runs", "show", str(runs[retried]))
    assert "needs review" in shown.stdout.splitlines()[0]
    assert json.loads(cli(svc, "runs", "show", str(runs[retried]), "--json").stdout)["needs_review"]

    out = cli(svc, "runs", "retry", str(runs[retried]))
    assert out.returncode == 0, out.stderr
    assert f"run {runs[retried]}: retried" in out.stdout
    out = cli(svc, "runs", "dismiss", str(runs[dismissed]), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["decision"] == "dismiss" and data["intent"]["status"] == "active"
    assert svc.intents.get(retried).pending_trigger == "retry"
    assert _awaiting(svc) == []

    # Deciding again, or a run that does not exist: one line, exit 1, nothing changed.
    before = svc.intents.get(dismissed).next_run_at
    for args in (
        ("runs", "dismiss", str(runs[dismissed])),
        ("runs", "retry", str(runs[retried])),
        ("runs", "retry", "9999"),
        ("runs", "retry"),
        ("runs", "dismiss", "x"),
    ):
        bad = cli(svc, *args)
        assert bad.returncode == 1, (args, bad.stdout, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "not awaiting review" in cli(svc, "runs", "retry", str(runs[retried])).stderr
    assert svc.intents.get(dismissed).next_run_at == before
