"""The scheduler's life-cycle state and its heartbeat (see docs/architecture.md)."""

from __future__ import annotations

from typing import NamedTuple


class Heartbeat(NamedTuple):
    """When the claim loop last went round: ``time.monotonic()`` and the wall clock
    (``time.time()``); readiness checks compare the first, people read the second."""

    monotonic: float
    wall: float
