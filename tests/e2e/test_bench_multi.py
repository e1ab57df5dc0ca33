"""``goalsui bench scheduler --daemons K``: K real scheduler processes share one burst."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.base_kit import run_cli

pytestmark = pytest.mark.slow

N = 200


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("bench", "scheduler", *args, cwd=cwd, timeout=180)


def test_two_daemons_fire_every_intent_exactly_once(db_url: str, tmp_path: Path) -> None:
    db = [] if db_url.startswith("sqlite") else ["--db", db_url]  # SQLite: the scratch default
    res = bench(tmp_path, "--daemons", "2", "--intents", str(N), *db, "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert (data["intents"], data["daemons"]) == (N, 2)
    # Counted in the run records: one ok run per intent, nothing extra, nothing missing.
    assert (data["runs_ok"], data["duplicates"], data["lost"]) == (N, 0, 0)
    assert data["exactly_once"] is True
    workers = data["workers"]
    assert len(workers) == 2 and len({w["pid"] for w in workers}) == 2
    assert sum(w["fires"] for w in workers) == N  # every fire came from one of the two
    assert data["fires_per_s"] > 0
    assert 0 <= data["lateness_p50_ms"] <= data["lateness_p99_ms"]
    assert ("SQLite" in data["database"]) == (not db)


def test_the_table_names_each_daemon_and_the_exactly_once_check(tmp_path: Path) -> None:
    res = bench(tmp_path, "--daemons", "2", "--intents", "50")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith(
        "goalsui bench scheduler: 50 intents due at once, 2 scheduler process(es)"
    )
    rows = dict(re.findall(r"^(\S.*?)\s{2,}(.*)$", "\n".join(out.splitlines()[3:11]), re.M))
    assert rows["runs ok"] == "50 of 50" and rows["exactly once"] == "ok"
    assert rows["duplicates"] == "0" and rows["lost"] == "0"
    daemon_rows = [line.split() for line in out.splitlines() if line[:1] in ("1", "2")]
    assert [row[0] for row in daemon_rows] == ["1", "2"]
    assert sum(int(row[2]) for row in daemon_rows) == 50


@pytest.mark.parametrize("value", ["0", "9"])
def test_bad_daemon_count_is_one_line(tmp_path: Path, value: str) -> None:
    res = bench(tmp_path, "--daemons", value, "--intents", "10")
    assert res.returncode == 1
    assert res.stderr.strip() == "goalsui: error: --daemons must be between 1 and 8"
