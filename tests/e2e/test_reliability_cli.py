"""Every bad input is one line on stderr and exit 1, never an internal error (issue 21.8).

Real subprocesses of the real command line, on a real SQLite file.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.e2e.test_bad_input_cli import run_all
from tests.hooks_kit import row_counts, tree_snapshot

DEEP_FILTER = '{"a":' * 5000 + "1" + "}" * 5000


def assert_one_line_error(result: subprocess.CompletedProcess) -> None:
    where = " ".join(result.args)
    assert result.returncode == 1, (where, result.stdout, result.stderr)
    assert result.stdout == "", where
    assert result.stderr.startswith("goalsui: error: "), (where, result.stderr)
    assert result.stderr.count("\n") == 1, (where, result.stderr)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_out_of_range_and_deeply_nested_input_is_one_line_and_changes_nothing(
    sample_kb: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    service = Service.open(sample_kb, None, state)
    rows = row_counts(service)
    service.close()
    tree = tree_snapshot(sample_kb)
    commands: list[tuple[str, ...]] = [
        ("schedule", "preview", "* * * * *", "--from", "9999-12-31T23:59:59"),
        ("intent", "add", "--title", "t", "--instruction", "i", "--every", "1h",
         "--max-fires", "99999999999999999999999"),
        ("intent", "add", "--title", "t", "--instruction", "i", "--event", "ci",
         "--filter", DEEP_FILTER),
    ]  # fmt: skip
    results = run_all(sample_kb, state, commands)
    for result in results:
        assert_one_line_error(result)
    assert "out of range" in results[0].stderr
    assert "--max-fires" in results[1].stderr
    assert "nested too deeply" in results[2].stderr
    assert tree_snapshot(sample_kb) == tree
    service = Service.open(sample_kb, None, state, sync=False)
    assert row_counts(service) == rows
    service.close()


@pytest.mark.parametrize("target", ["/dev/null", "/proc/nope"])
def test_init_where_no_kb_can_be_is_one_line(tmp_path: Path, target: str) -> None:
    (result,) = run_all(tmp_path / "kb", tmp_path / "state", [("init", target)])
    assert_one_line_error(result)
    assert f"cannot create a KB at {target}" in result.stderr


def test_init_on_a_file_leaves_the_file_alone(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    (result,) = run_all(tmp_path / "kb", tmp_path / "state", [("init", str(target))])
    assert_one_line_error(result)
    assert target.read_text() == "mine\n"


def _read_only_db(db: Path) -> list[str]:
    """Make ``db`` read-only: chmod 0444, plus the immutable flag as root (root writes to
    a 0444 file anyway)."""
    db.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(db)], check=True)
    return []


def test_every_write_on_a_read_only_database_is_one_line(sample_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    service = Service.open(sample_kb, None, state)
    thread = service.threads.create("notes")
    intent = service.intents.list()[0]
    rows = row_counts(service)
    service.close()
    for suffix in ("-wal", "-shm"):  # WAL checkpointed: the file holds it all
        (state / f"goalsui.db{suffix}").unlink(missing_ok=True)
    tree = tree_snapshot(sample_kb)
    extra = _read_only_db(state / "goalsui.db")
    writes: list[tuple[str, ...]] = [
        (*extra, "intent", "add", "--title", "t", "--instruction", "i", "--every", "1h"),
        (*extra, "intent", "pause", str(intent.id)),
        (*extra, "thread", "new", "another"),
        (*extra, "todo", "add", str(thread.id), "buy milk"),
        (*extra, "goal", "create", "Read Only", "--task", "nothing"),
    ]
    try:
        results = run_all(sample_kb, state, writes)
    finally:  # an immutable file would outlive the test's folder
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(state / "goalsui.db")], check=True)
    for result in results:
        assert_one_line_error(result)
        assert "read-only" in result.stderr, result.stderr
    assert tree_snapshot(sample_kb) == tree
    (state / "goalsui.db").chmod(0o644)
    service = Service.open(sample_kb, None, state, sync=False)
    assert row_counts(service) == rows
    service.close()
