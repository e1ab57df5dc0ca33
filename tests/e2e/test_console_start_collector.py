"""The console holds garbage collection off while it starts, and turns it back on with its
first frame: a console that ran for days with the collector off would only grow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goalsui.bench.console import bytecode_env, prepare, run_in_pty
from tests.base_kit import cli_argv

pytestmark = pytest.mark.slow


def test_the_collector_is_on_once_the_console_serves(tmp_path: Path) -> None:
    kb, state = prepare(tmp_path / "kb", large=None)
    marker = tmp_path / "marks.json"
    argv = [*cli_argv("console", kb=kb, state=state), "--no-scheduler"]
    env = {**bytecode_env(tmp_path), "GOALSUI_BENCH_FIRST_PAINT": str(marker)}
    seconds = run_in_pty(argv, marker, env)
    marks = json.loads(marker.read_text())
    assert marks["collecting"] is True
    assert seconds["paint_s"] <= seconds["records_s"] <= seconds["serving_s"]
