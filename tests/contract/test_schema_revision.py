"""Contract: a database at the shipped head is recognised with one query, and only then."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import text

from goalsui.service import Service
from goalsui.store import revision, schema


def test_the_quick_head_is_the_shipped_head() -> None:
    assert schema.head_revision() == revision.HEAD


def test_only_a_database_at_head_is_current(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    engine = service.store.engine
    assert revision.is_current(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    assert not revision.is_current(engine)  # older: the full check refuses it
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE alembic_version"))
    assert not revision.is_current(engine)  # unversioned: the full check decides


def test_opening_a_current_database_does_not_import_alembic(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    service = make_service(empty_kb, db_url)
    code = (
        "import sys\n"
        "from goalsui.service import Service\n"
        f"s = Service.open({str(empty_kb)!r}, {service.db_url!r}, {str(service.state_dir)!r})\n"
        "s.close()\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
