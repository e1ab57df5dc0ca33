"""Contract: creating an intent with an existing operation key returns that intent,
also when threads and processes race to create it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import col, func, select

from goalsui.service import Service
from goalsui.store.models import Intent
from tests.contract_procs import run_together


def _count(service: Service, key: str) -> int:
    with service.store.read() as s:
        return s.exec(select(func.count()).where(Intent.operation_key == key)).one()


def test_same_key_returns_the_existing_intent(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    first = service.intents.create(
        title="nightly", kind="cron", schedule="0 3 * * *", operation_key="k1"
    )
    again = service.intents.create(
        title="other title", kind="heartbeat", schedule="5m", operation_key="k1"
    )
    assert again.id == first.id
    assert again.title == "nightly"
    assert _count(service, "k1") == 1
    other = service.intents.create(
        title="nightly", kind="cron", schedule="0 3 * * *", operation_key="k2"
    )
    assert other.id != first.id


def test_concurrent_creation_from_threads(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    barrier = threading.Barrier(8)
    ids: list[int] = []
    errors: list[BaseException] = []

    def create() -> None:
        try:
            barrier.wait(timeout=30)
            intent = service.intents.create(
                title="race", kind="cron", schedule="*/5 * * * *", operation_key="race-threads"
            )
            ids.append(intent.id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(ids) == 8 and len(set(ids)) == 1
    assert _count(service, "race-threads") == 1


def test_concurrent_creation_from_processes(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    service = make_service(empty_kb, db_url)  # the schema exists before the race
    ids = run_together(
        3, empty_kb, db_url, tmp_path / "state", "create_intent", "race-procs", go_dir=tmp_path
    )
    assert len(set(ids)) == 1
    assert _count(service, "race-procs") == 1
    assert service.intents.get(ids[0]).operation_key == "race-procs"


WAIT = 30.0


def _blocked_on_a_lock(service: Service) -> bool:
    """PostgreSQL: another backend of this database waits for a row lock."""
    from sqlalchemy import text

    with service.store.engine.connect() as conn:
        return bool(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar()
        )


@pytest.mark.parametrize("operation", ["pause", "run-now"])
def test_operator_action_racing_a_claim_sees_the_claim(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], operation: str
) -> None:
    """A claim in flight (not yet committed) and a pause/run-now on the same intent:
    the operator's action waits for the claim and then sees a firing intent (pause is
    deferred to the end of the run; run-now is recorded skipped: overlap). It never
    overwrites the claim, on either engine."""
    service = make_service(empty_kb, db_url)
    operator = make_service(empty_kb, db_url)
    intent = service.intents.create(title="claimed", kind="cron", schedule="* * * * *")
    claim_open, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def claim() -> None:
        try:
            with service.store.write() as s:
                hit = s.execute(
                    update(Intent)
                    .where(col(Intent.id) == intent.id, col(Intent.status) == "active")
                    .values(status="firing", lease_owner="scheduler-1")
                    .returning(col(Intent.id))
                ).all()
                assert len(hit) == 1
                claim_open.set()
                release.wait(WAIT)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            claim_open.set()

    def act() -> None:
        try:
            if operation == "pause":
                operator.intents.pause(intent.id)
            else:
                operator.intents.run_now(intent.id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    claimer = threading.Thread(target=claim)
    claimer.start()
    assert claim_open.wait(WAIT)
    actor = threading.Thread(target=act)
    actor.start()
    if service.store.dialect == "postgresql":
        deadline = time.monotonic() + WAIT
        while not _blocked_on_a_lock(service):  # the action must be queued behind the claim
            assert time.monotonic() < deadline, "the operator action never waited for the claim"
            time.sleep(0.01)
    release.set()
    claimer.join(WAIT)
    actor.join(WAIT)
    assert errors == []
    after = service.intents.get(intent.id)
    assert after.status == "firing"
    assert after.lease_owner == "scheduler-1"
    if operation == "pause":
        assert after.pending_trigger == "pause"
    else:
        (run,) = service.runs.list(intent_id=intent.id)
        assert (run.status, run.reason) == ("skipped", "overlap")
