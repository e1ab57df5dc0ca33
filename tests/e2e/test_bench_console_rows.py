"""``goalsui bench console`` prints its rows with targets (a short run; no timing asserted)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from goalsui.bench.console import cpu_seconds
from goalsui.tui.rss import peak_rss_kb
from tests.base_kit import run_cli


def test_peak_rss_is_the_measured_process_own() -> None:
    """VmHWM of the child itself, not ru_maxrss, which a child inherits from a big parent."""
    ballast = bytearray(120 * 1024 * 1024)  # the parent's peak: over 120 MiB
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from goalsui.tui.rss import peak_rss_kb; print(peak_rss_kb())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    child_kb = int(out.stdout)
    assert 0 < child_kb < 100 * 1024
    assert peak_rss_kb() >= 120 * 1024
    del ballast


def test_cpu_seconds_reads_a_live_process() -> None:
    assert cpu_seconds(os.getpid()) > 0


@pytest.mark.slow
def test_bench_console_prints_its_rows_and_targets(tmp_path) -> None:
    done = run_cli(
        "bench", "console", "--goals", "3", "--workers", "2", "--repeat", "1",
        "--samples", "2", "--idle-seconds", "1",
        extra_env={"TMPDIR": str(tmp_path)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    for row in (
        "start to first paint",
        "start to dashboard complete",
        "peak RSS (VmHWM of the child)",
        "idle CPU over 1s (sample KB)",
        "share of one core, scheduler on",
        "prompt.md write -> refreshed pane",
    ):
        assert row in out, out
    idle = next(line for line in out.splitlines() if line.startswith("share of one core"))
    assert "<=1%" in idle and idle.rstrip().endswith(("ok", "MISSED"))
    complete = out.split("start to dashboard complete")[1].splitlines()[1]
    assert complete.startswith("sample KB") and "<=1.5x" in complete
    assert list(tmp_path.iterdir()) == []  # the scratch folders are removed
