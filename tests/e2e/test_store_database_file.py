"""A deleted or replaced SQLite file is an error, never a second, empty database.

Real files, a real CLI and a real daemon process: the daemon notices the file it opened
is gone (its inode) and stops with one clear line; the CLI refuses to create an empty
database where one was created before, until ``goalsui db upgrade`` says so.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from goalsui.errors import DatabaseReplaced, NoDatabase
from goalsui.store.db import Store
from goalsui.store.models import Journal
from goalsui.store.tables import table_of
from tests.base_kit import run_cli
from tests.daemon_kit import Daemon, wait_until


def _cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, kb=kb, state=state)


def _remove_database(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_running_store_refuses_a_file_deleted_or_replaced(tmp_path: Path, how: str) -> None:
    db = tmp_path / "goalsui.db"
    store = Store(f"sqlite:///{db}")
    try:
        store.ensure_schema()
        assert store.count_rows(store_table()) == 0
        if how == "deleted":
            _remove_database(db)
        else:
            sqlite3.connect(tmp_path / "other.db").close()
            os.replace(tmp_path / "other.db", db)
        with pytest.raises(DatabaseReplaced) as caught:
            store.count_rows(store_table())
        assert str(caught.value) == (
            f"the database file {db} was deleted or replaced while goalsui was running"
        )
        with pytest.raises(DatabaseReplaced), store.write() as session:
            session.add(Journal(actor="test", action="write", subject="", detail=""))
        assert (not db.exists()) if how == "deleted" else db.stat().st_size == 0
    finally:
        store.dispose()


def store_table():
    return table_of(Journal)


def test_a_new_store_does_not_create_a_database_that_was_deleted(tmp_path: Path) -> None:
    db = tmp_path / "goalsui.db"
    first = Store(f"sqlite:///{db}")
    first.ensure_schema()
    first.dispose()
    _remove_database(db)
    again = Store(f"sqlite:///{db}")
    with pytest.raises(
        NoDatabase, match=r"^no database at .*goalsui\.db; run 'goalsui db upgrade'"
    ):
        again.ensure_schema()
    again.dispose()
    assert not db.exists()


def test_the_cli_refuses_then_db_upgrade_creates(sample_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    db = state / "goalsui.db"
    first = _cli(sample_kb, state, "goal", "list", "--json")  # first use creates it
    assert first.returncode == 0, first.stderr
    assert db.exists()
    _remove_database(db)
    for args in (("goal", "list"), ("intent", "list"), ("db", "status")):
        refused = _cli(sample_kb, state, *args)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.strip().splitlines() == [
            f"goalsui: error: no database at {db.resolve()}; run 'goalsui db upgrade' to create it"
        ]
        assert not db.exists()
    upgraded = _cli(sample_kb, state, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert db.exists()
    again = _cli(sample_kb, state, "goal", "list", "--json")
    assert again.returncode == 0, again.stderr


@pytest.mark.slow
def test_a_daemon_stops_when_its_database_file_is_deleted(sample_kb: Path, tmp_path: Path):
    state = tmp_path / "state"
    db = state / "goalsui.db"
    daemon = Daemon(sample_kb, state)
    try:
        daemon.wait_ready()
        moved = tmp_path / "moved.db"
        shutil.move(db, moved)  # the daemon's file is no longer at its path
        wait_until(lambda: daemon.proc.poll() is not None, timeout=30)
    finally:
        code = daemon.stop()
    message = f"the database file {db.resolve()} was deleted or replaced while goalsui was running"
    assert code == 1, "\n".join(daemon.lines)
    assert daemon.lines[-1] == f"goalsui: error: {message}"
    assert any(line.endswith(f"scheduler stopped: {message}") for line in daemon.lines)
    assert not any("Traceback" in line for line in daemon.lines)
    assert not db.exists()  # nothing created an empty one in its place
