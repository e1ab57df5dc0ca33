"""Pure rules of ``goalsui plan``: expected run length and intents overlapping themselves
(a fire before the previous run ends is skipped); intents starting together do not conflict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta


def p95(values: Sequence[float]) -> float:
    """The 95th percentile by nearest rank (the largest value for fewer than 20 samples)."""
    if not values:
        raise ValueError("p95 of no values")
    ordered = sorted(values)
    rank = math.ceil(0.95 * len(ordered))
    return ordered[max(rank, 1) - 1]


def expected_length(durations_s: Sequence[float], timeout: timedelta) -> tuple[timedelta, str]:
    """(length, basis): the observed p95 duration when there are runs, else the timeout."""
    if durations_s:
        value = timedelta(seconds=p95(durations_s))
        n = len(durations_s)
        return value, f"p95 {_short(value)} of {n} run{'s' if n != 1 else ''}"
    return timeout, f"timeout {_short(timeout)}"


def _short(value: timedelta) -> str:
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs and not hours else "") or "0s"


def self_overlaps(
    starts: Sequence[datetime], length: timedelta, busy_until: datetime | None = None
) -> list[int]:
    """Indexes of ``starts`` that begin while the intent's previous run (or the live one,
    until ``busy_until``) is expected to run; a skipped fire does not move the end."""
    hits: list[int] = []
    busy = busy_until
    for index, start in enumerate(starts):
        if busy is not None and start < busy:
            hits.append(index)
            continue
        busy = start + length
    return hits
