"""``goalsui bench scheduler`` runs end to end and reports its figures beside the references."""

from __future__ import annotations

import json
import statistics

import pytest

from tests.base_kit import run_cli

pytestmark = pytest.mark.slow


def test_bench_scheduler_json(tmp_path):
    res = run_cli(
        "bench", "scheduler", "--intents", "60", "--idle-seconds", "0.2",
        "--spread-seconds", "0.3", "--repeat", "3", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["intents"] == 60 and data["runs_ok"] == 60
    assert data["fires_per_s"] > 0 and data["raw_claims_per_s"] > 0
    for key in (
        "lateness_p50_ms",
        "lateness_p99_ms",
        "aps_lateness_p99_ms",
        "spread_p99_ms",
        "aps_spread_p99_ms",
    ):
        assert data[key] >= 0
    assert 0 <= data["idle_cpu_pct"] < 100
    assert set(data["targets"]) == {
        "throughput",
        "lateness_p99",
        "lateness_spread_p99",
        "idle_cpu",
        "wake_latency",
    }
    # Another process's ``intent add`` due now fired while the scheduler idled.
    assert 0 < data["wake_latency_ms"] < 30_000
    assert "no-op" in data["turn"]
    # Three runs (burst and spread), each beside its references; the figures are medians.
    assert data["repeat"] == 3
    for key in (
        "fires_per_s",
        "lateness_p99_ms",
        "raw_claims_per_s",
        "aps_lateness_p99_ms",
        "spread_p99_ms",
        "aps_spread_p99_ms",
    ):
        assert len(data["runs"][key]) == 3
        assert data[key] == statistics.median(data["runs"][key])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--intents", "0"], "--intents must be between 1 and 200000"),
        (["--repeat", "0"], "--repeat must be between 1 and 20"),
        (
            ["--daemons", "2", "--repeat", "2"],
            "--repeat does not apply with --daemons (one burst, no references)",
        ),
    ],
)
def test_bench_rejects_bad_input_in_one_line(tmp_path, args, message):
    res = run_cli("bench", "scheduler", *args, cwd=tmp_path, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip() == f"goalsui: error: {message}"


def test_bench_console_without_its_module_is_a_clear_error(monkeypatch):
    import argparse
    import importlib

    from goalsui.cli import bench
    from goalsui.errors import GoalsuiError

    real = importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "goalsui.bench.console":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(GoalsuiError, match="'bench console' is not available"):
        bench.cmd_bench(argparse.Namespace(json=False, bench_command="console", idle_seconds=None))


def test_settle_heap_freezes_the_start_up_heap_raises_the_young_threshold_and_shortens_switches():
    """What goalsui daemon (and the benches) do once the scheduler started."""
    import gc
    import sys

    from goalsui.scheduler.heap import SWITCH_INTERVAL, YOUNG_THRESHOLD, settle_heap

    before, switch = gc.get_threshold(), sys.getswitchinterval()
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
        assert switch > SWITCH_INTERVAL  # shorter than the interpreter's own
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        sys.setswitchinterval(switch)


def test_bench_refuses_a_database_that_holds_intents_and_leaves_it_alone(
    tmp_path, empty_kb, make_service
):
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    make_service(empty_kb, url).intents.create(
        title="keep me", kind="at", schedule="2030-01-01T00:00:00Z"
    )
    res = run_cli("bench", "scheduler", "--db", url, "--intents", "5", cwd=tmp_path, timeout=60)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "already holds 1 intents" in res.stderr
    assert [i.title for i in make_service(empty_kb, url).intents.list()] == ["keep me"]
