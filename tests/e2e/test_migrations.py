"""Alembic migrations: shipped in the wheel, in step with the models, on both engines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

from goalsui.cli import main as cli_main
from goalsui.store import revision, schema
from goalsui.store.engine import make_engine
from tests.base_kit import run_cli

REPO = Path(__file__).resolve().parent.parent.parent
PY = sys.executable

# An extra revision on top of the shipped head: a column and an index added through
# batch mode (SQLite) / plain ALTER (PostgreSQL), as a real second release would.
EXTRA_REVISION = '''
"""test-only second revision"""
from alembic import op
import sqlalchemy as sa

revision = "9001"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("thread") as batch_op:
        batch_op.add_column(sa.Column("color", sa.String(length=20), nullable=True))
        batch_op.create_index("ix_thread_color", ["color"])


def downgrade() -> None:
    with op.batch_alter_table("thread") as batch_op:
        batch_op.drop_index("ix_thread_color")
        batch_op.drop_column("color")
'''


@pytest.fixture
def engine(db_url: str):
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def newer_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Pretend this goalsui ships one more revision than the package does."""
    head = schema.head_revision()
    folder = tmp_path / "migrations"
    shutil.copytree(schema.MIGRATIONS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "versions" / "9001_test_extra.py").write_text(EXTRA_REVISION.format(head=head))
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", folder)
    monkeypatch.setattr(revision, "HEAD", "9001")  # kept equal to the shipped head
    return head


def test_models_and_migrations_agree(engine) -> None:
    """A column added to store/models.py without a migration fails here."""
    schema.ensure_schema(engine)
    with engine.connect() as conn, conn.begin():
        drift = schema.schema_drift(conn)
    assert drift == [], (
        "the models and the migrations disagree; add a revision (see "
        f"goalsui/store/migrations/README): {drift}"
    )


def test_first_revision_creates_every_model_table_and_index(engine) -> None:
    schema.ensure_schema(engine)
    insp = inspect(engine)
    assert set(SQLModel.metadata.tables) <= set(insp.get_table_names())
    for table in SQLModel.metadata.tables.values():
        want = {ix.name for ix in table.indexes}
        have = {ix["name"] for ix in insp.get_indexes(table.name)}
        assert want <= have, f"{table.name}: missing indexes {want - have}"
    assert {"status", "next_run_at"} == set(
        next(ix for ix in insp.get_indexes("intent") if ix["name"] == "ix_intent_due")[
            "column_names"
        ]
    )


def test_timestamp_columns_are_timezone_aware_on_postgres(engine) -> None:
    """timestamptz on PostgreSQL; on SQLite a DATETIME holding UTC (see UTCDateTime)."""
    schema.ensure_schema(engine)
    columns = [c for c in inspect(engine).get_columns("intent") if c["name"].endswith("_at")]
    assert len(columns) >= 6
    for column in columns:
        if engine.dialect.name == "postgresql":
            assert column["type"].timezone is True, column
        else:
            assert type(column["type"]).__name__ == "DATETIME", column


def test_downgrade_to_base_and_back(engine) -> None:
    from alembic import command

    schema.ensure_schema(engine)
    with engine.connect() as conn, conn.begin():
        command.downgrade(schema.alembic_config(conn), "base")
    assert schema.status(engine).state == schema.EMPTY
    assert not set(SQLModel.metadata.tables) & set(inspect(engine).get_table_names())
    assert schema.ensure_schema(engine).state == schema.CURRENT


def test_older_database_is_refused_then_upgraded(engine, newer_code: str) -> None:
    with engine.connect() as conn, conn.begin():
        from alembic import command

        command.upgrade(schema.alembic_config(conn), newer_code)  # the previous release
    before = schema.status(engine)
    assert (before.state, before.current, before.pending) == (
        schema.OUTDATED,
        (newer_code,),
        ("9001",),
    )
    with pytest.raises(schema.SchemaError) as err:
        schema.ensure_schema(engine)
    assert str(err.value) == (
        f"the database schema (rev {newer_code}) is older than this goalsui (rev 9001); "
        "run 'goalsui db upgrade'"
    )
    old, new = schema.upgrade(engine)
    assert (old.state, new.state, new.current) == (schema.OUTDATED, schema.CURRENT, ("9001",))
    columns = {c["name"] for c in inspect(engine).get_columns("thread")}
    assert "color" in columns
    assert schema.ensure_schema(engine).state == schema.CURRENT


def test_newer_database_is_refused(engine) -> None:
    schema.ensure_schema(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'zz99'"))
    with pytest.raises(schema.SchemaError) as err:
        schema.ensure_schema(engine)
    assert str(err.value) == (
        "the database schema (rev zz99) is newer than this goalsui knows; upgrade goalsui"
    )
    with pytest.raises(schema.SchemaError, match="newer than this goalsui"):
        schema.upgrade(engine)


def test_unversioned_database_is_adopted_by_upgrade(engine) -> None:
    """A database made by create_all() before migrations existed."""
    SQLModel.metadata.create_all(engine)
    assert schema.status(engine).state == schema.UNVERSIONED
    with pytest.raises(schema.SchemaError, match="no schema version; run 'goalsui db upgrade'"):
        schema.ensure_schema(engine)
    _, after = schema.upgrade(engine)
    assert after.state == schema.CURRENT


def test_unversioned_database_that_differs_is_not_stamped(engine) -> None:
    SQLModel.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_intent_due"))
    with pytest.raises(schema.SchemaError, match="differ from this goalsui's schema"):
        schema.upgrade(engine)
    assert schema.status(engine).state == schema.UNVERSIONED


# --- the command line ----------------------------------------------------------------


def _goalsui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GOALSUI_DB", None)
    return run_cli(*args, env=env, cwd=cwd, timeout=60)


def test_cli_db_status_and_upgrade(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--kb", str(tmp_path / "no-kb-needed"), "--db", db_url, "db"]
    assert cli_main([*base, "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "empty"
    assert cli_main([*base, "upgrade"]) == 0
    assert f"from rev none to rev {schema.head_revision()}" in capsys.readouterr().out
    assert cli_main([*base, "upgrade"]) == 0
    assert "already at the newest schema" in capsys.readouterr().out
    assert cli_main([*base, "status"]) == 0
    out = capsys.readouterr().out
    assert "state:    up to date" in out
    assert f"current:  {schema.head_revision()}" in out


def test_cli_on_an_older_database(
    db_url: str, empty_kb: Path, newer_code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn, conn.begin():
            from alembic import command

            command.upgrade(schema.alembic_config(conn), newer_code)
    finally:
        engine.dispose()
    base = ["--kb", str(empty_kb), "--db", db_url]
    assert cli_main([*base, "thread", "list"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "older than this goalsui (rev 9001); run 'goalsui db upgrade'" in err
    assert cli_main([*base, "db", "status"]) == 0
    assert "1 migration(s) pending" in capsys.readouterr().out
    assert cli_main([*base, "db", "upgrade"]) == 0
    assert f"from rev {newer_code} to rev 9001" in capsys.readouterr().out
    assert cli_main([*base, "thread", "list"]) == 0


def test_cli_refuses_unreachable_database_in_one_line(tmp_path: Path) -> None:
    res = _goalsui("--db", "postgresql://nobody@127.0.0.1:9/none", "db", "status", cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.startswith("goalsui: error: cannot open the database ")
    assert res.stderr.count("\n") == 1


# --- packaging -----------------------------------------------------------------------


def test_wheel_ships_the_migrations_and_they_run_from_it(tmp_path: Path) -> None:
    """Build the wheel, unpack it elsewhere, create a schema from the unpacked copy."""
    build = subprocess.run(
        [PY, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path / "dist")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("goalsui-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    assert "goalsui/store/migrations/env.py" in names
    assert "goalsui/store/migrations/script.py.mako" in names
    assert any(n.startswith("goalsui/store/migrations/versions/0001") for n in names)
    assert not any(n.endswith("alembic.ini") for n in names)
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "site")!r})
        from goalsui.store import schema
        from goalsui.store.engine import make_engine
        assert schema.MIGRATIONS_DIR.is_relative_to({str(tmp_path / "site")!r}), schema.MIGRATIONS_DIR
        print(schema.ensure_schema(make_engine({f"sqlite:///{tmp_path / 'w.db'}"!r})).state)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [PY, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "current"
