"""The PostgreSQL half of the suite has a server to talk to.

scripts/test.sh starts one throwaway server for the whole run and exports
GOALSUI_TEST_PG_URL (postgresql+psycopg://postgres@127.0.0.1:<port>/goalsui_test).
Without it these tests skip, except in CI, where a missing server is a failure.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests import pgserver

pytestmark = pytest.mark.postgres

# pg_url (tests/conftest.py) skips without a server, and fails in CI


def test_server_answers(pg_url: str) -> None:
    with psycopg.connect(pgserver.libpq_url(pg_url), connect_timeout=10) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        (version,) = conn.execute("show server_version").fetchone()
    assert version.split(".")[0].isdigit(), version


def test_create_database_gives_a_fresh_database(pg_url: str) -> None:
    name = f"goalsui_t_{uuid.uuid4().hex[:12]}"
    url = pgserver.create_database(pg_url, name)
    try:
        assert url.startswith("postgresql+psycopg://") and url.endswith("/" + name)
        with psycopg.connect(pgserver.libpq_url(url), connect_timeout=10) as conn:
            conn.execute("create table t (x int)")
            conn.commit()
        # Recreating it drops what was there.
        assert pgserver.create_database(pg_url, name) == url
        with psycopg.connect(pgserver.libpq_url(url), connect_timeout=10) as conn:
            (db, tables) = conn.execute(
                "select current_database(), count(*) from pg_tables where schemaname = 'public'"
            ).fetchone()
        assert (db, tables) == (name, 0)
    finally:
        pgserver.drop_database(url)
