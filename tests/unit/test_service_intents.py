"""Intents through the service: validation, lifecycle actions, runs and schedule previews."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from goalsui.errors import Conflict, NotFound, ScheduleError, ValidationError
from goalsui.service import Service
from goalsui.service.overview import schedule_preview
from goalsui.store.models import IntentRun

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)  # the FakeClock's start, a Wednesday


def cron(service: Service, **kw):
    args = {
        "title": "Friday reminder",
        "instruction": "go",
        "kind": "cron",
        "schedule": "0 16 * * 5",
    }
    return service.intents.create(**{**args, **kw})


def test_create_cron_in_a_timezone(service: Service) -> None:
    intent = cron(service, timezone="Europe/Berlin")
    assert intent.status == "active" and intent.kind == "cron"
    assert intent.timezone == "Europe/Berlin"
    assert intent.next_run_at == datetime(2026, 12, 4, 15, 0, tzinfo=UTC)  # 16:00 CET
    assert service.intents.get(intent.id).next_run_at == intent.next_run_at
    assert cron(service, title="utc").next_run_at == datetime(2026, 12, 4, 16, 0, tzinfo=UTC)


def test_create_other_kinds(service: Service) -> None:
    at = service.intents.create(title="once", kind="at", schedule="2026-12-24T18:00:00+01:00")
    assert at.next_run_at == datetime(2026, 12, 24, 17, 0, tzinfo=UTC) and at.timezone == "UTC"
    local = service.intents.create(
        title="once", kind="at", schedule="2026-12-24 18:00", timezone="America/New_York"
    )
    assert local.next_run_at == datetime(2026, 12, 24, 23, 0, tzinfo=UTC)
    beat = service.intents.create(
        title="beat", kind="heartbeat", schedule="30m", checklist="- [ ] x"
    )
    assert beat.next_run_at == NOW + timedelta(minutes=30)
    ev = service.intents.create(
        title="ci", kind="event", event_source="ci", event_filter={"ref": "main"}, cooldown="5m"
    )
    assert ev.next_run_at is None and ev.cooldown_s == 300 and ev.event_filter == {"ref": "main"}
    capped = cron(service, max_fires=3, expires_at="2027-01-01T00:00:00Z")
    assert capped.max_fires == 3 and capped.expires_at == datetime(2027, 1, 1, tzinfo=UTC)


INVALID: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"schedule": "0 16 * *"}, ScheduleError, "invalid cron"),
    ({"schedule": "61 * * * *"}, ScheduleError, "invalid cron"),
    ({"timezone": "Europe/Berlim"}, ScheduleError, "unknown timezone"),
    ({"timezone": "../../etc/passwd"}, ScheduleError, "unknown timezone"),
    ({"kind": "at", "schedule": "2026-12-24T18:00"}, ScheduleError, "no UTC offset"),
    ({"kind": "at", "schedule": "tomorrow"}, ScheduleError, "invalid timestamp"),
    ({"kind": "at", "schedule": "2026-02-30T10:00Z"}, ScheduleError, "invalid timestamp"),
    ({"kind": "heartbeat", "schedule": "5s"}, ScheduleError, "at least 10s"),
    ({"kind": "heartbeat", "schedule": "often"}, ScheduleError, "invalid duration"),
    ({"kind": "event", "schedule": None}, ValidationError, "needs a source"),
    ({"kind": "event", "event_source": "../ci"}, ValidationError, "invalid event source"),
    ({"kind": "sometimes"}, ValidationError, "unknown intent kind"),
    ({"title": "  "}, ValidationError, "needs a title"),
    ({"max_fires": 0}, ValidationError, "max-fires"),
    ({"expires_at": "2026-12-01T00:00:00Z"}, ValidationError, "in the past"),
    ({"expires_at": "2027-01-01T00:00"}, ScheduleError, "no UTC offset"),
    ({"cooldown": "-5m"}, ScheduleError, "greater than zero"),
    ({"thread_id": 999}, NotFound, "no thread 999"),
    ({"goal_id": "no-such-goal"}, NotFound, "no goal"),
    ({"goal_id": "../etc"}, ValidationError, "invalid goal id"),
]


def test_invalid_intents_are_refused_and_nothing_is_stored(service: Service) -> None:
    before = len(service.intents.list())
    for kw, error, words in INVALID:
        with pytest.raises(error, match=words):
            cron(service, **kw)
    assert len(service.intents.list()) == before


def test_private_thread_refuses_intents(service: Service) -> None:
    private = service.threads.create("Taxes", private=True)
    before = len(service.intents.list())
    with pytest.raises(ValidationError, match=f"thread {private.id} is private"):
        cron(service, thread_id=private.id, operation_key="tax-reminder")
    assert len(service.intents.list()) == before
    public = service.threads.create("Visa")
    assert cron(service, thread_id=public.id).thread_id == public.id


def test_pause_resume_plans_from_now(service: Service, clock) -> None:
    intent = cron(service, schedule="0 9 * * *")
    assert intent.next_run_at == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert service.intents.pause(intent.id).status == "paused"
    assert service.intents.pause(intent.id).status == "paused"  # idempotent
    clock.advance(days=5)  # five 09:00 occurrences pass while paused
    resumed = service.intents.resume(intent.id)
    assert resumed.status == "active"
    assert resumed.next_run_at == datetime(2026, 12, 8, 9, 0, tzinfo=UTC)  # no catch-up storm
    with pytest.raises(Conflict):
        service.intents.resume(intent.id)  # not paused


def test_resume_failed_resets_failures(service: Service) -> None:
    intent = cron(service)
    with service.store.write() as s:
        row = s.get(type(intent), intent.id)
        row.status, row.consecutive_failures, row.last_error = "failed", 5, "exit 1"
        s.add(row)
    resumed = service.intents.resume(intent.id)
    assert (resumed.status, resumed.consecutive_failures) == ("active", 0)


def test_cancel_and_run_now(service: Service, clock) -> None:
    intent = cron(service)
    due = service.intents.run_now(intent.id)
    assert due.next_run_at == clock.now and due.pending_trigger == "run-now"
    cancelled = service.intents.cancel(intent.id)
    assert cancelled.status == "cancelled" and cancelled.next_run_at is None
    for action in (service.intents.pause, service.intents.run_now):
        with pytest.raises(Conflict):
            action(intent.id)
    # an ended schedule is reinstated by resume, planned from now (issue 19)
    reinstated = service.intents.resume(intent.id)
    assert reinstated.status == "active" and reinstated.next_run_at > clock.now
    paused = cron(service, title="paused")
    service.intents.pause(paused.id)
    with pytest.raises(Conflict, match="resume it first"):
        service.intents.run_now(paused.id)
    for action in (
        service.intents.pause,
        service.intents.resume,
        service.intents.cancel,
        service.intents.run_now,
    ):
        with pytest.raises(NotFound):
            action(4242)


def test_run_now_while_firing_records_an_overlap_skip(service: Service) -> None:
    intent = cron(service)
    with service.store.write() as s:
        row = s.get(type(intent), intent.id)
        row.status = "firing"
        s.add(row)
    service.intents.run_now(intent.id)
    runs = service.runs.list(intent_id=intent.id)
    assert [(r.trigger, r.status, r.reason) for r in runs] == [("run-now", "skipped", "overlap")]


def test_run_listing(service: Service, clock) -> None:
    a, b = cron(service, title="a"), cron(service, title="b")
    statuses = ["ok", "failed", "silent", "timeout", "missed", "skipped"]
    with service.store.write() as s:
        for n, status in enumerate(statuses):
            start = NOW - timedelta(hours=len(statuses) - n)
            s.add(
                IntentRun(
                    intent_id=a.id if n % 2 == 0 else b.id,
                    attempt=1,
                    trigger="schedule",
                    status=status,
                    started_at=start,
                    finished_at=start + timedelta(seconds=3),
                    exit_code=1 if status == "failed" else 0,
                )
            )
    runs = service.runs.list()
    assert [r.status for r in runs] == list(reversed(statuses))  # newest first
    assert [r.status for r in service.runs.list(failed=True)] == ["missed", "timeout", "failed"]
    assert {r.intent_id for r in service.runs.list(intent_id=a.id)} == {a.id}
    assert len(service.runs.list(limit=2)) == 2
    with pytest.raises(ValidationError):
        service.runs.list(limit=0)


def test_schedule_preview_has_utc_offsets_across_dst() -> None:
    result = schedule_preview(
        "30 2 * * *", tz="Europe/Berlin", start="2026-03-28T00:00:00+01:00", count=3
    )
    assert result == {
        "expression": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "occurrences": [
            "2026-03-28T02:30:00+01:00",
            "2026-03-29T03:00:00+02:00",  # 02:30 does not exist that day
            "2026-03-30T02:30:00+02:00",
        ],
    }
    naive_from = schedule_preview(
        "0 9 * * 1", tz="America/New_York", start="2026-11-01 00:00", count=2
    )
    assert naive_from["occurrences"] == ["2026-11-02T09:00:00-05:00", "2026-11-09T09:00:00-05:00"]


def test_schedule_preview_from_now(service: Service) -> None:
    result = schedule_preview("0 * * * *", count=2, now=service.now())
    assert result["occurrences"] == ["2026-12-02T13:00:00+00:00", "2026-12-02T14:00:00+00:00"]
    for kw in ({"count": 0}, {"count": 5000}, {"tz": "Nowhere/City"}, {"start": "soon"}):
        with pytest.raises(ValidationError):
            schedule_preview("0 * * * *", now=service.now(), **kw)
    with pytest.raises(ValidationError):
        schedule_preview("every day")
