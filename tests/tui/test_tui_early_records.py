"""The first frame's records, read with the standard library before the service opens.

They must be the records the service's own read gives (same fields, same types, same
order), or the console would show one thing for half a second and then another.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from goalsui.service import Service
from goalsui.service.quick import sqlite_file
from goalsui.tui.model import Dashboard, load_dashboard
from goalsui.tui.preview import early_dashboard
from tests.base_kit import FakeClock, run_cli
from tests.tui.test_tui_startup import traced_console
from tests.tui_kit import NIGHT, PULSE, REPO, add_run, worker_intent


def busy_history(demo: Service, clock: FakeClock) -> None:
    """Runs of every kind the panes show: ok, failed, running, dismissed, old."""
    now = clock()
    pulse = worker_intent(demo, PULSE, "pulse")
    flaky = worker_intent(demo, PULSE, "flaky")
    add_run(demo, pulse, "ok", now - timedelta(minutes=5), output="fine")
    add_run(demo, pulse, "ok", now - timedelta(minutes=3))
    add_run(demo, flaky, "failed", now - timedelta(minutes=2), output="boom", exit_code=1)
    add_run(demo, flaky, "timeout", now - timedelta(hours=30))  # outside the window
    dismissed = add_run(demo, flaky, "failed", now - timedelta(minutes=9))
    demo.runs.dismiss(dismissed)
    add_run(demo, worker_intent(demo, NIGHT, "scout"), "running", now - timedelta(seconds=20))


def test_early_records_are_the_services_records(demo: Service, clock: FakeClock) -> None:
    busy_history(demo, clock)
    thread = next(t for t in demo.threads.list() if t.worker is None)  # not a home thread
    first_todo = demo.todos.list(thread.id)[0]
    demo.todos.complete(thread.id, first_todo.id)
    full = load_dashboard(demo, clock())
    path = sqlite_file(demo.kb.root, demo.db_url, None)
    assert path is not None and path.is_file()
    early = early_dashboard(path, clock())
    assert isinstance(early, Dashboard) and early.early and not early.preview

    assert early.goals == full.goals  # the same views, workers and all
    assert early.intents == full.intents and early.running == full.running  # the same values
    assert early.recent == full.recent
    assert early.attention == full.attention and len(full.attention) == 2
    assert early.disabled == full.disabled and early.threads == full.threads
    assert early.summary == full.summary and full.summary["running"] == 1
    assert early.spend_today == full.spend_today


def test_no_early_records_for_another_schema_or_no_file(demo: Service, tmp_path: Path) -> None:
    path = sqlite_file(demo.kb.root, demo.db_url, None)
    assert path is not None
    assert early_dashboard(tmp_path / "missing.db", demo.now()) is None
    copy = tmp_path / "old.db"
    shutil.copy(path, copy)
    import sqlite3

    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    assert early_dashboard(copy, demo.now()) is None  # the service upgrades it first
    (tmp_path / "junk.db").write_bytes(b"not a database")
    assert early_dashboard(tmp_path / "junk.db", demo.now()) is None


def test_the_database_file_the_service_would_open(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    assert sqlite_file(kb, "sqlite:////x/y.db", None) == Path("/x/y.db")
    assert sqlite_file(kb, "postgresql://h/db", None) is None
    assert sqlite_file(kb, "sqlite:///:memory:", None) is None
    assert sqlite_file(kb, None, str(tmp_path / "s")) == tmp_path / "s" / "goalsui.db"
    with_service = Service(kb.parent, None, tmp_path / "s2")  # the service's own default
    try:
        assert sqlite_file(kb.parent, None, str(tmp_path / "s2")) == Path(
            with_service.db_url.removeprefix("sqlite:///")
        )
    finally:
        with_service.close()


def test_a_console_on_an_existing_database_paints_its_records_first(tmp_path: Path) -> None:
    """A real ``goalsui console`` (headless): once the database exists, the first frame
    has the records, before SQLAlchemy or SQLModel is imported."""
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "sample_kb", kb)
    # no database yet: the KB preview, then the service's records
    first = traced_console(kb, tmp_path / "state", tmp_path)
    assert first["paint_preview"] is True and "sqlalchemy" in first["records"]
    # the KB indexed into the database (as any earlier session leaves it)
    assert run_cli("goal", "list", kb=kb, state=tmp_path / "state").returncode == 0
    second = traced_console(kb, tmp_path / "state", tmp_path)
    assert second["paint_preview"] is False and second["paint_goals"] == 4
    assert second["paint"] == [] and second["records"] == [], "the records waited for the ORM"
    assert second["records_preview"] is False
