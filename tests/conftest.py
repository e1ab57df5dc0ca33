"""Shared fixtures: real KB folders, real SQLite files, a real PostgreSQL server."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import pgserver  # noqa: E402

from goalsui.service import Service  # noqa: E402

NO_PG = "no PostgreSQL server available (set GOALSUI_TEST_PG_URL or install postgresql)"


class FakeClock:
    """An injectable clock: ``clock()`` returns the current fake instant (aware UTC)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0, **kwargs: float) -> datetime:
        self.now = self.now + timedelta(seconds=seconds, **kwargs)
        return self.now

    def set(self, when: datetime) -> datetime:
        self.now = when
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sample_kb(tmp_path: Path) -> Path:
    """A private copy of the bundled sample KB."""
    target = tmp_path / "kb"
    shutil.copytree(REPO / "sample_kb", target)
    return target


@pytest.fixture
def empty_kb(tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    target.mkdir()
    return target


@pytest.fixture(scope="session")
def pg_url() -> str:
    url = os.environ.get("GOALSUI_TEST_PG_URL")
    if url:
        return url
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL half of the suite: {NO_PG}", pytrace=False)
    pytest.skip(NO_PG)


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database on the test server, dropped afterwards."""
    url = pgserver.create_database(pg_url, f"goalsui_t_{uuid.uuid4().hex[:12]}")
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):  # a leftover test database is harmless
            pgserver.drop_database(url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database on each engine: a SQLite file, then a new PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'goalsui.db'}"
    return request.getfixturevalue("pg_db")


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[Callable[..., Service]]:
    """Open services on a KB with a private state dir; all are closed at the end."""
    opened: list[Service] = []

    def factory(kb: Path, db_url: str | None = None, **kwargs: object) -> Service:
        state = tmp_path / "state"
        service = Service.open(kb, db_url, state, **kwargs)  # type: ignore[arg-type]
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


@pytest.fixture
def service(sample_kb: Path, make_service: Callable[..., Service], clock: FakeClock) -> Service:
    """A service on a copy of the sample KB, a SQLite file, and a fake clock."""
    return make_service(sample_kb, clock=clock)


# -- the PostgreSQL half, counted for the log ---------------------------------------------------
_PG_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember how each test marked ``postgres`` ended (its call, or a failed set-up)."""
    if "postgres" in report.keywords and (report.when == "call" or report.outcome != "passed"):
        _PG_OUTCOMES[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line that says whether the PostgreSQL half really ran, and against what."""
    if not _PG_OUTCOMES:
        return
    outcomes = list(_PG_OUTCOMES.values())
    url = os.environ.get("GOALSUI_TEST_PG_URL", "")
    server = f"server at {url.rsplit('@', 1)[-1]}" if url else NO_PG
    terminalreporter.write_line(
        f"PostgreSQL half: {outcomes.count('passed')} passed, {outcomes.count('failed')} "
        f"failed, {outcomes.count('skipped')} skipped ({server})"
    )


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC for the test (times on screen do not depend on the machine)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
