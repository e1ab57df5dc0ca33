"""``goalsui bench chaos``, short: three real daemons on a PostgreSQL server of the test's
own (the bench restarts it), every kind of intent, a fault every 3 s for 30 s; every
invariant must hold."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pgserver
from tests.base_kit import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(420)]


@pytest.fixture
def own_server() -> Iterator[pgserver.Server]:
    """A server the bench may restart (never the suite's shared one)."""
    if pgserver.find_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs the PostgreSQL server binaries", pytrace=False)
        pytest.skip("no PostgreSQL server binaries (the bench restarts a server of its own)")
    server = pgserver.start()
    try:
        yield server
    finally:
        pgserver.stop(server.dir)


def chaos(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("bench", "chaos", *args, cwd=cwd, timeout=400)


def test_a_short_chaos_run_keeps_every_invariant(
    own_server: pgserver.Server, tmp_path: Path
) -> None:
    db = pgserver.create_database(own_server.url, "chaos")
    res = chaos(
        tmp_path,
        "--db",
        db,
        "--pg-dir",
        str(own_server.dir),
        "--minutes",
        "0.5",
        "--fault-every",
        "3",
        "--settle-seconds",
        "20",
        "--json",
    )
    data = json.loads(res.stdout)
    assert res.returncode == 0, json.dumps(data["examples"], indent=1) + "\n" + res.stderr[-2000:]
    assert data["ok"] is True and not any(data["violations"].values())
    # Every kind of fault was dealt (one round of each within the first 12 s at most).
    kinds = {k.split(" (")[0] for k in data["faults"]}
    assert kinds == {"kill -9", "SIGSTOP > lease", "pg restart", "dropped connection"}, data
    assert data["checked"]["every expected occurrence has a record (ran, skipped or missed)"] > 20
    fires = sum(n for s, n in data["runs"].items() if s not in ("skipped", "missed"))
    assert fires > 30
    assert {"schedule", "event"} <= set(data["triggers"])
    assert data["runs"].get("skipped", 0) > 0  # the empty checklist and the quiet hours


def test_db_is_required_and_must_be_postgres(tmp_path: Path) -> None:
    res = chaos(tmp_path, "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert res.returncode == 1
    assert "PostgreSQL" in res.stderr and len(res.stderr.strip().splitlines()) == 1
