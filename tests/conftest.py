"""Shared fixtures: real KB folders, real SQLite files, a real PostgreSQL server.

The suite is in tiers, each a folder with its own conftest.py: ``unit`` (one process, no
server), ``contract`` (the same behaviour on SQLite and PostgreSQL), ``tui`` (the real
Textual app through its pilot), ``e2e`` (the CLI, daemons and agents as real processes).
Helpers shared across tiers live in ``tests/*_kit.py`` (imported by package:
``from tests.base_kit import ...``), never in a conftest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from goalsui.service import Service
from tests import pgserver
from tests.base_kit import NO_PG, REPO, TESTS, FakeClock


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


# -- fixtures every tier shares -----------------------------------------------------------------
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

    def factory(kb: Path, db_url: str | None = None, **kwargs: Any) -> Service:
        state = tmp_path / "state"
        service = Service.open(kb, db_url, state, **kwargs)
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


# -- the console on a copy of the demo KB (tests/tui, and e2e tests that open a console) -------
@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo KB and database, built once per module and copied by :func:`demo`."""
    from tests.tui_kit import build_template

    return build_template(tmp_path_factory.mktemp("demo-template"), FakeClock())


@pytest.fixture
def demo(tmp_path: Path, clock: FakeClock, template: Path) -> Iterator[Service]:
    """A service on a fresh copy of the demo template, on the fake clock."""
    from tests.tui_kit import open_demo

    service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    yield service
    service.close()


# -- tiers: each test carries its folder's marker (pytest -m unit, -m "not e2e", ...) ----------
TIERS = ("unit", "contract", "tui", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS and item.path.parent.parent == TESTS:
            item.add_marker(tier)
