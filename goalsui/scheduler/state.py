"""The scheduler's life-cycle state and its heartbeat (see docs/architecture.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class SchedulerState(StrEnum):
    """Where a scheduler is in its life; a ``StrEnum``, so ``state == "running"`` holds.

    ``FAILED``: one of its tasks died; ``Scheduler.error`` says which and why.
    """

    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    FAILED = "failed"


class Heartbeat(NamedTuple):
    """When the claim loop last went round: ``time.monotonic()`` and the wall clock
    (``time.time()``); readiness checks compare the first, people read the second."""

    monotonic: float
    wall: float
