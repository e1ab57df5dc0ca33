"""Contract: timestamps go in aware, come out aware UTC (same instant, microseconds kept),
compare and sort as instants, and are stored unambiguously on both engines."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import text
from sqlalchemy.exc import StatementError
from sqlmodel import col, select

from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")

INSTANTS = [
    datetime(2026, 3, 29, 1, 59, 59, 999_999, tzinfo=UTC),  # the second before Berlin's spring gap
    datetime(2026, 3, 29, 3, 0, 0, 1, tzinfo=BERLIN),  # just after it (01:00:00.000001 UTC)
    datetime(2026, 11, 1, 1, 30, tzinfo=NEW_YORK),  # first 01:30 (EDT, 05:30 UTC)
    datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NEW_YORK),  # second 01:30 (EST, 06:30 UTC)
    datetime(2026, 12, 2, 23, 45, tzinfo=timezone(timedelta(hours=5, minutes=30))),
]


def _store_intents(service: Service) -> list[int]:
    ids = []
    with service.store.write() as s:
        for i, when in enumerate(INSTANTS):
            intent = Intent(title=f"t{i}", kind="at", next_run_at=when, expires_at=when)
            s.add(intent)
            s.flush()
            ids.append(intent.id)
    return ids


def test_round_trip_is_the_same_instant_in_utc(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    ids = _store_intents(service)
    for intent_id, when in zip(ids, INSTANTS, strict=True):
        got = service.intents.get(intent_id).next_run_at
        assert got is not None
        assert got.utcoffset() == timedelta(0) and got.tzinfo is UTC
        # (compare in UTC: PEP 495 makes an ambiguous local time unequal across zones)
        assert got == when.astimezone(UTC)
        assert got.microsecond == when.astimezone(UTC).microsecond


def test_comparisons_and_ordering_are_by_instant(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    ids = _store_intents(service)
    by_instant = [
        i for _, i in sorted(zip([t.astimezone(UTC) for t in INSTANTS], ids, strict=True))
    ]
    with service.store.read() as s:
        ordered = s.exec(select(Intent.id).order_by(col(Intent.next_run_at))).all()
        # The second New York 01:30 is one real hour after the first.
        boundary = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NEW_YORK)
        due = s.exec(select(Intent.id).where(col(Intent.next_run_at) < boundary)).all()
    assert list(ordered) == by_instant
    assert sorted(due) == sorted(ids[:3])


def test_storage_is_utc_whatever_the_session_time_zone(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    ids = _store_intents(service)
    with service.store.engine.connect() as conn:
        if service.store.dialect == "postgresql":
            conn.execute(text("SET TIME ZONE 'Asia/Kolkata'"))
            raw = conn.execute(
                text(
                    "SELECT to_char(next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
                    "FROM intent WHERE id = :id"
                ),
                {"id": ids[3]},
            ).scalar()
        else:
            raw = conn.execute(
                text("SELECT next_run_at FROM intent WHERE id = :id"), {"id": ids[3]}
            ).scalar()
    assert raw == "2026-11-01 06:30:00.000000"
    # Reading through a session in another time zone still gives the UTC instant.
    assert service.intents.get(ids[3]).next_run_at == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


def test_naive_datetimes_are_refused(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    intent = service.intents.create(title="x", kind="cron", schedule="0 3 * * *")
    with pytest.raises(StatementError, match="naive datetime"), service.store.write() as s:
        s.add(IntentRun(intent_id=intent.id, started_at=datetime(2026, 1, 1, 12, 0)))
    assert service.runs.list(intent_id=intent.id) == []


def test_service_timestamps_come_back_utc(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    intent = service.intents.create(
        title="berlin", kind="cron", schedule="30 2 * * *", timezone="Europe/Berlin"
    )
    stored = service.intents.get(intent.id)
    assert stored.next_run_at is not None and stored.next_run_at.tzinfo is UTC
    assert stored.created_at.tzinfo is UTC and stored.updated_at.tzinfo is UTC
    local = stored.next_run_at.astimezone(BERLIN)
    assert (local.hour, local.minute) in {(2, 30), (3, 0)}
