"""Contract: the schema is created on first use, once, even by several processes at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

from goalsui.errors import GoalsuiError
from goalsui.service import Service
from goalsui.store import schema
from tests.contract_procs import run_together


def test_first_use_creates_and_stamps_the_schema(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    assert service.schema.status() == {
        "state": "current",
        "current": [schema.head_revision()],
        "head": schema.head_revision(),
        "pending": [],
        "message": "up to date",
    }
    assert set(SQLModel.metadata.tables) <= set(inspect(service.store.engine).get_table_names())
    # A second open finds it done.
    again = make_service(empty_kb, db_url)
    assert again.schema.status()["state"] == "current"


def test_concurrent_first_use_by_several_processes(
    db_url: str, sample_kb: Path, tmp_path: Path
) -> None:
    """Several processes start on a fresh database at once: each creates-or-finds the
    schema and indexes the same KB; none fails, nothing is created twice."""
    states = run_together(3, sample_kb, db_url, tmp_path / "state", "open", go_dir=tmp_path)
    assert states == ["current"] * 3
    service = Service.open(sample_kb, db_url, tmp_path / "state", sync=False)
    try:
        with service.store.engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
        assert versions == [(schema.head_revision(),)]
        goals = service.goals.list()
        assert sorted(g.goal_id for g in goals) == sorted(service.kb.goal_ids())
        keys = [i.operation_key for i in service.intents.list()]
        assert len(keys) == len(set(keys)) > 0
    finally:
        service.close()


def test_open_refuses_a_newer_schema_in_one_line(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    service = make_service(empty_kb, db_url)
    with service.store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '7777'"))
    with pytest.raises(GoalsuiError) as err:
        Service.open(empty_kb, db_url, tmp_path / "state2")
    assert str(err.value) == (
        "the database schema (rev 7777) is newer than this goalsui knows; upgrade goalsui"
    )
