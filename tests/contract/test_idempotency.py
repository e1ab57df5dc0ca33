"""Creating an intent with an operation key: one intent, however many ask at once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.base_kit import cli_popen

PROCESSES = 20


@pytest.mark.slow
def test_twenty_processes_one_key_one_intent(empty_kb: Path, tmp_path: Path) -> None:
    """Twenty real ``goalsui intent add --key K`` processes, started together on a fresh
    SQLite file: every one succeeds and prints the same id, and one row exists."""
    state = tmp_path / "state"
    args = [
        "intent", "add", "--title", "Friday reminder", "--instruction", "check the list",
        "--cron", "0 16 * * 5", "--tz", "Europe/Berlin", "--key", "friday-K", "--json",
    ]  # fmt: skip
    procs = [
        cli_popen(*args, kb=empty_kb, state=state, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(PROCESSES)
    ]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    failures = [(rc, err) for rc, _, err in results if rc != 0]
    assert failures == []
    shapes = [json.loads(out) for _, out, _ in results]
    ids = {s["id"] for s in shapes}
    assert len(ids) == 1
    assert all(s == shapes[0] for s in shapes)  # twenty identical answers
    assert shapes[0]["operation_key"] == "friday-K"
    with sqlite3.connect(state / "goalsui.db") as con:
        rows = con.execute("SELECT id FROM intent WHERE operation_key = 'friday-K'").fetchall()
        thread_intents = con.execute(
            "SELECT count(*) FROM intent WHERE goal_id IS NULL"
        ).fetchone()[0]
    assert rows == [(ids.pop(),)]
    assert thread_intents == 1


def test_same_key_returns_the_existing_intent(service: Service) -> None:
    first = service.intents.create(
        title="Reminder", instruction="a", kind="cron", schedule="0 9 * * *", operation_key="k1"
    )
    again = service.intents.create(
        title="Other title", instruction="b", kind="heartbeat", schedule="5m", operation_key="k1"
    )
    assert again.id == first.id and again.title == "Reminder"
    assert len([i for i in service.intents.list() if i.operation_key == "k1"]) == 1
    other = service.intents.create(
        title="Reminder", instruction="a", kind="cron", schedule="0 9 * * *", operation_key="k2"
    )
    assert other.id != first.id


def test_key_is_returned_even_after_the_intent_ended(service: Service) -> None:
    first = service.intents.create(
        title="Once", kind="at", schedule="2026-12-24T18:00:00Z", operation_key="xmas"
    )
    service.intents.cancel(first.id)
    again = service.intents.create(
        title="Once", kind="at", schedule="2026-12-24T18:00:00Z", operation_key="xmas"
    )
    assert again.id == first.id and again.status == "cancelled"


def test_operation_key_is_validated(service: Service) -> None:
    from goalsui.errors import ValidationError

    for key in ("", "   ", "x" * 201, "a\x00b"):
        with pytest.raises(ValidationError):
            service.intents.create(title="t", kind="cron", schedule="0 9 * * *", operation_key=key)


def test_concurrent_creation_on_each_engine(db_url: str, empty_kb: Path, tmp_path: Path) -> None:
    """Eight services (own engines and connections) race on one key: SQLite and PostgreSQL."""
    import threading

    services = [Service.open(empty_kb, db_url, tmp_path / "state") for _ in range(8)]
    barrier = threading.Barrier(len(services))
    ids: list[int] = []
    errors: list[BaseException] = []

    def create(service: Service) -> None:
        try:
            barrier.wait(timeout=30)
            intent = service.intents.create(
                title="race", kind="heartbeat", schedule="30m", operation_key="race-key"
            )
            ids.append(intent.id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(s,)) for s in services]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        assert len(ids) == len(services) and len(set(ids)) == 1
        stored = [i.id for i in services[0].intents.list() if i.operation_key == "race-key"]
        assert stored == ids[:1]
    finally:
        for service in services:
            service.close()
