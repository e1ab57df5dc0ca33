"""A scheduler that cannot write keeps running, degraded, and recovers by itself (issue 29).

The database is made "full" the way a full disk does it: SQLite's ``max_page_count``
pragma, set on every connection the scheduler checks out, makes every write that needs
a new page fail with ``SQLITE_FULL`` ("database or disk is full"), exactly the error a
full disk gives; raising the limit again is "freeing space". Nothing is mocked above
the SQLite library: the real scheduler, its timed loop and its claim backend.
"""

from __future__ import annotations

import asyncio
import errno
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import event

from goalsui.domain.timeutil import utcnow
from goalsui.ops.health import start_ops_server
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.contract.test_scheduler_claims import bulk_at

UNLIMITED = 1_073_741_823  # SQLite's largest max_page_count
PROMPTLY = 30.0  # a bound on waiting, not a speed claim


class Disk:
    """A switch for the database's room: ``fill()`` leaves no free page, ``free()``
    gives room again. Applied on every checkout of the service's write engine."""

    def __init__(self, service: Service) -> None:
        self.engine = service.store.engine
        self.limit = UNLIMITED
        event.listen(self.engine, "checkout", self._apply)

    def _apply(self, dbapi_conn: sqlite3.Connection, *_: object) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count = {self.limit}")

    def fill(self) -> None:
        """Use up the database's room: no write that needs a new page succeeds."""
        raw = self.engine.raw_connection()
        try:
            cur = raw.cursor()
            pages = cur.execute("PRAGMA page_count").fetchone()[0]
            self.limit = pages + 8
            cur.execute(f"PRAGMA max_page_count = {self.limit}")
            cur.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
            raw.commit()
            # fill every free page, then the free room of the last pages of the journal
            # (which every step of the scheduler writes), row by row
            fills = {
                "INSERT INTO filler VALUES (zeroblob(?))": (4096, 512),
                "INSERT INTO journal (at, actor, action, subject, detail) "
                "VALUES ('9999-12-31 00:00:00.000000', 'test', 'filler', '', zeroblob(?))": (
                    512,
                    64,
                    8,
                    0,
                ),
            }
            for statement, sizes in fills.items():
                for size in sizes:
                    try:
                        while True:
                            cur.execute(statement, (size,))
                    except sqlite3.OperationalError as exc:
                        assert "full" in str(exc)
        finally:
            raw.close()

    def free(self) -> None:
        self.limit = UNLIMITED

    def close(self) -> None:
        event.remove(self.engine, "checkout", self._apply)


@pytest.fixture
def live(empty_kb: Path, make_service: Callable[..., Service]) -> Iterator[Service]:
    """A service on a real clock (the scheduler's timed loop runs)."""
    yield make_service(empty_kb)


def db_file(service: Service) -> str:
    return str(service.store.engine.url.database)


def runs_of(service: Service) -> dict[int, list[str]]:
    with sqlite3.connect(db_file(service)) as conn:
        rows = conn.execute("SELECT intent_id, status FROM intent_run ORDER BY id").fetchall()
    out: dict[int, list[str]] = {}
    for intent_id, status in rows:
        out.setdefault(intent_id, []).append(status)
    return out


def intent_statuses(service: Service) -> dict[int, str]:
    with sqlite3.connect(db_file(service)) as conn:
        return dict(conn.execute("SELECT id, status FROM intent").fetchall())


async def until(predicate: Callable[[], bool], timeout: float = PROMPTLY) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics")


async def test_a_full_database_degrades_the_scheduler_and_it_recovers_by_itself(
    live: Service,
) -> None:
    disk = Disk(live)
    started: list[int] = []

    async def turn(service, intent, run, *, event=None, cancel):
        started.append(intent.id)
        await asyncio.sleep(1.0 if intent.title == "long0" else 0.05)
        return TurnOutcome("ok")

    now = utcnow()
    long_id = bulk_at(live, 1, now, prefix="long")[0]
    later = [i for k in range(4) for i in bulk_at(live, 1, now + timedelta(seconds=1.2 + 0.4 * k))]
    live.changed("intents")
    scheduler = Scheduler(live, turn=turn, poll_interval=0.2, lease_seconds=30)
    await scheduler.start()
    ops = await start_ops_server(live, scheduler, "127.0.0.1", 0, max_quiet=10.0)
    base = f"http://127.0.0.1:{ops.port}"
    try:
        await until(lambda: long_id in started)
        assert (await get(f"{base}/readyz"))[0] == 200
        await asyncio.to_thread(disk.fill)  # the long turn ends on a full disk
        # not ready, with the reason; the process and its scheduler keep running
        deadline = time.monotonic() + PROMPTLY
        while (answer := await get(f"{base}/readyz"))[0] == 200:
            assert time.monotonic() < deadline, "still ready on a full disk"
            await asyncio.sleep(0.1)
        assert answer[0] == 503 and "full" in answer[1], answer
        _, text = await get(f"{base}/metrics")
        assert metric(text, "goalsui_scheduler_up") == 0.0
        assert metric(text, "goalsui_scheduler_degraded") == 1.0
        await asyncio.sleep(2.5)  # the later intents fall due meanwhile
        assert scheduler.state == "running"
        assert (await get(f"{base}/readyz"))[0] == 503

        disk.free()
        # by itself: nothing wakes it; every outcome is recorded, every intent ran once
        await until(
            lambda: (
                all(runs_of(live).get(i) == ["ok"] for i in [long_id, *later])
                and set(intent_statuses(live).values()) == {"done"}
            )
        )
        await until(lambda: scheduler.degraded is None)
        assert await get(f"{base}/readyz") == (200, "ready\n")
        _, text = await get(f"{base}/metrics")
        assert metric(text, "goalsui_scheduler_up") == 1.0
        assert metric(text, "goalsui_scheduler_degraded") == 0.0
        assert sorted(started) == sorted([long_id, *later])  # none ran twice
    finally:
        disk.free()
        await ops.close()
        await scheduler.stop()
        disk.close()


async def test_the_turn_keeps_running_while_its_outcome_waits(live: Service) -> None:
    """An outcome that cannot be written is kept, not dropped (its run would stay
    ``running`` and its intent ``firing`` for good); drain() waits for the disk."""
    disk = Disk(live)

    async def turn(service, intent, run, *, event=None, cancel):
        return TurnOutcome("ok")

    ids = bulk_at(live, 3, utcnow())
    scheduler = Scheduler(live, turn=turn, poll_interval=0.2)
    try:
        started = await scheduler.tick()
        assert len(started) == 3
        await asyncio.to_thread(disk.fill)
        with pytest.raises(TimeoutError):
            await scheduler.drain(timeout=1.5)
        assert scheduler.degraded is not None and "full" in scheduler.degraded
        assert all(runs_of(live)[i] == ["running"] for i in ids)
        disk.free()
        await scheduler.drain(timeout=PROMPTLY)
        assert all(runs_of(live)[i] == ["ok"] for i in ids)
        assert scheduler.degraded is None
    finally:
        disk.free()
        await scheduler.stop()
        disk.close()


def test_cannot_write_names_the_cause() -> None:
    from goalsui.scheduler.troubles import cannot_write

    assert cannot_write(OSError(errno.ENOSPC, "No space left on device")) == (
        "no space left on the disk"
    )
    full = sqlite3.OperationalError("database or disk is full")
    assert cannot_write(RuntimeError("wrapped")) is None
    try:
        try:
            raise full
        except sqlite3.OperationalError as inner:
            raise RuntimeError("step failed") from inner
    except RuntimeError as outer:
        assert cannot_write(outer) == "the database or its disk is full"
