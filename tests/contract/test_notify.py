"""LISTEN/NOTIFY: a change made through any service (or process) wakes every listener."""

from __future__ import annotations

import queue
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from goalsui.service import Service
from goalsui.store import notify
from goalsui.store.engine import make_engine
from tests.base_kit import run_cli

WAIT = 15.0  # generous: only bounds a failure, never measured
REPO = Path(__file__).resolve().parent.parent.parent


class Inbox:
    """Collects callback calls from the listener thread."""

    def __init__(self) -> None:
        self.q: queue.Queue[str] = queue.Queue()

    def __call__(self, what: str) -> None:
        self.q.put(what)

    def next(self) -> str:
        try:
            return self.q.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no notification within {WAIT} s") from None

    def until(self, what: str) -> list[str]:
        seen = []
        while True:
            got = self.next()
            seen.append(got)
            if got == what:
                return seen


@pytest.fixture
def two_services(
    pg_db: str, empty_kb: Path, make_service: Callable[..., Service]
) -> tuple[Service, Service]:
    first = make_service(empty_kb, pg_db, actor="console")
    second = make_service(empty_kb, pg_db, actor="scheduler")
    return first, second


@pytest.mark.postgres
def test_a_change_through_one_service_wakes_the_other(two_services) -> None:
    a, b = two_services
    assert a.changes.across_processes and b.changes.across_processes
    inbox = Inbox()
    stop = b.changes.listen(inbox)
    intent = a.intents.create(title="wake", kind="cron", schedule="0 * * * *")
    assert inbox.next() == "intents"
    a.intents.pause(intent.id)
    assert inbox.next() == "intents"
    a.intents.resume(intent.id)
    a.intents.run_now(intent.id)
    assert inbox.until("intents") == ["intents"]
    thread = a.threads.create("notes")
    a.todos.add(thread.id, "check the logs")
    assert inbox.until("todos")[-1] == "todos"
    stop()


@pytest.mark.postgres
def test_every_listener_wakes_and_own_changes_are_skipped(two_services) -> None:
    a, b = two_services
    inbox_a, inbox_b, inbox_b_all = Inbox(), Inbox(), Inbox()
    a.changes.listen(inbox_a)
    b.changes.listen(inbox_b)
    b.changes.listen(inbox_b_all, include_own=True)
    a.changed("from-a")
    b.changed("from-b")
    # Notifications arrive in commit order: A's own echo would come before "from-b".
    assert inbox_a.next() == "from-b"
    assert inbox_b.next() == "from-a"
    assert inbox_b_all.next() == "from-a"
    assert inbox_b_all.next() == "from-b"


@pytest.mark.postgres
def test_publish_now_is_delivered_and_a_listener_skips_its_own_origin(pg_db: str) -> None:
    inbox = Inbox()
    listener = notify.ChangeListener(pg_db, inbox, ignore_origin="me")
    assert listener.start()
    engine = make_engine(pg_db)
    try:
        assert notify.publish_now(engine, "own", origin="me") is True
        assert notify.publish_now(engine, "committed", origin="tx") is True
        assert inbox.next() == "committed"
    finally:
        listener.stop()
        engine.dispose()


@pytest.mark.postgres
def test_a_change_from_another_process_wakes_the_listener(
    two_services, empty_kb: Path, pg_db: str
) -> None:
    a, _ = two_services
    inbox = Inbox()
    a.changes.listen(inbox)
    res = run_cli(
        "thread", "new", "x", kb=empty_kb, db=pg_db, extra_env={"PYTHONPATH": str(REPO)}, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "threads" in inbox.until("threads")


@pytest.mark.postgres
def test_listener_survives_a_dropped_connection_and_a_bad_callback(pg_db: str) -> None:
    inbox = Inbox()

    def callback(what: str) -> None:
        inbox(what)
        if what == "boom":
            raise RuntimeError("a faulty consumer")

    listener = notify.ChangeListener(pg_db, callback, max_backoff=0.5)
    assert listener.start()
    engine = make_engine(pg_db)
    try:
        notify.publish_now(engine, "boom")
        assert inbox.next() == "boom"
        with engine.connect() as conn:
            killed = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN%'"
                )
            ).all()
        assert killed == [(True,)]
        assert inbox.next() == notify.RECONNECTED
        notify.publish_now(engine, "after")
        assert inbox.next() == "after"
    finally:
        listener.stop()
        engine.dispose()
    assert not listener._thread.is_alive()


@pytest.mark.postgres
def test_close_stops_the_listener_threads(pg_db: str, empty_kb: Path, tmp_path: Path) -> None:
    service = Service.open(empty_kb, pg_db, tmp_path / "state")
    service.changes.listen(Inbox())
    (listener,) = service.changes.remote
    assert listener.listening
    service.close()
    assert not listener._thread.is_alive()


def test_payload_round_trip() -> None:
    assert notify.decode(notify.encode("intents", "12-ab")) == ("intents", "12-ab")
    assert notify.decode(notify.encode("a@b")) == ("a_b", "")
    assert len(notify.encode("x" * 20_000).encode()) <= notify.MAX_PAYLOAD


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/goalsui.db"])
def test_sqlite_has_no_cross_process_notifications(
    url: str, tmp_path: Path, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, url.format(tmp=tmp_path))
    assert service.changes.across_processes is False
    stop = service.changes.listen(Inbox())
    assert service.changes.remote == []
    stop()
    assert notify.publish_now(service.store.engine, "intents") is False
