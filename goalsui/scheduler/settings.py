"""The knobs of one scheduler, checked once (see docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from goalsui.scheduler import tuning
from goalsui.scheduler.tuning import LOOKAHEAD, PRUNE_AFTER, SWEEP_EVERY


@dataclass(frozen=True)
class Settings:
    """Timing and capacity of a scheduler; build it with :meth:`make`."""

    poll_interval: float
    lease_seconds: float
    grace_seconds: float
    max_concurrency: int
    sweep_interval: float
    prune_after: timedelta
    lookahead: timedelta
    #: the furthest a burst is claimed ahead (no further than the lookahead if it is 0)
    max_ahead: timedelta

    @classmethod
    def make(
        cls,
        *,
        poll_interval: float = 1.0,
        lease_seconds: float = 30,
        grace_seconds: float = 5,
        max_concurrency: int = 8,
        sweep_interval: float | None = None,
        prune_after: timedelta = PRUNE_AFTER,
        lookahead_seconds: float = LOOKAHEAD,
    ) -> Settings:
        """Check and derive the settings (``ValueError`` on a bad value)."""
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if lease_seconds <= 0 or poll_interval <= 0:
            raise ValueError("lease_seconds and poll_interval must be positive")
        lease = float(lease_seconds)
        lookahead = timedelta(seconds=max(0.0, min(float(lookahead_seconds), 1.0)))
        ahead = min(tuning.MAX_AHEAD, lease / 4) if lookahead else 0.0
        return cls(
            poll_interval=min(float(poll_interval), 1.0),
            lease_seconds=lease,
            grace_seconds=float(grace_seconds),
            max_concurrency=int(max_concurrency),
            sweep_interval=sweep_interval or min(SWEEP_EVERY, max(lease / 2, 0.2)),
            prune_after=prune_after,
            lookahead=lookahead,
            max_ahead=max(lookahead, timedelta(seconds=ahead)),
        )

    def bursts_possible(self) -> bool:
        """Whether this scheduler ever claims further than its lookahead: its slots can
        hold a burst (8 rows are not one)."""
        most = timedelta(seconds=self.max_concurrency * tuning.CLAIM_AHEAD_PER_ROW)
        return min(most, self.max_ahead) > self.lookahead
