"""Retry delays after consecutive failures (docs/architecture.md, "Retry")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class RetryPolicy:
    """``retry`` of goalsui.yaml: the backoff and the failures before auto-disable."""

    base_seconds: float = 2
    cap_seconds: float = 300
    max_consecutive_failures: int = 5


def retry_delay(n_failures: int, base: float = 2, cap: float = 300) -> timedelta:
    """``min(base ** n_failures, cap)`` seconds for the n-th failure; never overflows."""
    if isinstance(n_failures, bool) or not isinstance(n_failures, int):
        raise TypeError("n_failures must be an int")
    if n_failures < 1:
        raise ValueError("n_failures must be at least 1")
    if not (base > 0 and math.isfinite(base)) or not (cap >= 0 and math.isfinite(cap)):
        raise ValueError("base must be positive and cap non-negative, both finite")
    try:
        delay = float(base) ** n_failures
    except OverflowError:
        delay = math.inf
    return timedelta(seconds=min(delay, float(cap)))
