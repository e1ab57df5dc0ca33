"""The pure conflict rule of ``goalsui plan`` (goalsui/domain/plan_rules.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from goalsui.domain.plan_rules import expected_length, p95, self_overlaps

T0 = datetime(2026, 12, 2, 20, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_p95_by_nearest_rank() -> None:
    assert p95([5.0]) == 5.0
    assert p95([3.0, 1.0, 2.0]) == 3.0
    assert p95([float(n) for n in range(1, 101)]) == 95.0
    assert p95([1.0] * 19 + [100.0]) == 1.0
    with pytest.raises(ValueError):
        p95([])


def test_expected_length_prefers_observed_runs_over_the_timeout() -> None:
    assert expected_length([], timedelta(minutes=10)) == (timedelta(minutes=10), "timeout 10m")
    length, basis = expected_length([40.0, 42.0, 38.0], timedelta(minutes=10))
    assert length == timedelta(seconds=42) and basis == "p95 42.0s of 3 runs"
    assert expected_length([90.0], timedelta(hours=1))[1] == "p95 1m30s of 1 run"


def test_fires_farther_apart_than_the_run_never_conflict() -> None:
    starts = [at(0), at(5), at(10)]
    assert self_overlaps(starts, timedelta(minutes=5)) == []  # ends exactly as the next starts
    assert self_overlaps(starts, timedelta(minutes=1)) == []
    assert self_overlaps([], timedelta(hours=1)) == []


def test_a_fire_inside_the_previous_run_conflicts_and_is_skipped() -> None:
    starts = [at(m) for m in range(0, 30, 5)]
    # 12 minutes long: 0 runs to 12, so 5 and 10 collide; 15 runs to 27, so 20 and 25 collide
    assert self_overlaps(starts, timedelta(minutes=12)) == [1, 2, 4, 5]


def test_a_live_run_blocks_the_first_fires() -> None:
    starts = [at(1), at(2), at(10)]
    assert self_overlaps(starts, timedelta(seconds=30), busy_until=at(5)) == [0, 1]
    assert self_overlaps(starts, timedelta(seconds=30), busy_until=at(0)) == []
