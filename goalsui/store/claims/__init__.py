"""The scheduler's statements: claim, lease, overlap, completion, recovery, catch-up, pruning.

One :class:`~goalsui.store.claims.backend.ClaimBackend` per engine
(:func:`claim_backend_for`) runs them: SQLAlchemy Core on the generic SQL backend (row
locks with ``FOR UPDATE [SKIP LOCKED]`` where the dialect has them, PostgreSQL), the
DBAPI cursor on the SQLite one (under ``BEGIN IMMEDIATE``). Every operation is ONE
short transaction on the writer engine, so that several schedulers on one database
never fire the same occurrence. An ORM session per claim is about 7x slower.

The rules (what to do with a due row, how an outcome changes an intent) are not here:
callers pass them in as ``decide`` callbacks (see :mod:`goalsui.scheduler.rules`), which
see each row as a plain ``dict`` and return what to write. The pure part of turning rows
and decisions into values to write is :mod:`goalsui.store.claims.planner`.

The module-level functions below are the engine-first form the scheduler has always
called; each hands over to the engine's backend.

Modules: ``shapes`` (values exchanged with the scheduler), ``binds`` and ``statements``
(Core plumbing), ``planner`` (pure), ``primitives`` (statements per kind of engine),
``claim``, ``complete``, ``recovery``, ``housekeeping`` (the steps), ``backend``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from goalsui.store.claims.backend import (
    ClaimBackend,
    SqlClaimBackend,
    SqliteClaimBackend,
    claim_backend_for,
)
from goalsui.store.claims.binds import EVENT, INTENT, JOURNAL, RUN
from goalsui.store.claims.claim import burst_size
from goalsui.store.claims.shapes import (
    CLAIM_BATCH,
    JOURNAL_DETAIL_LIMIT,
    AfterDecision,
    BurstProbe,
    CatchUpPlan,
    ClaimDecision,
    ClaimedRun,
    ClaimResult,
    Completion,
    CompletionResult,
    RecoveryResult,
    Row,
)

__all__ = [
    "CLAIM_BATCH",
    "EVENT",
    "INTENT",
    "JOURNAL",
    "JOURNAL_DETAIL_LIMIT",
    "RUN",
    "AfterDecision",
    "BurstProbe",
    "CatchUpPlan",
    "ClaimBackend",
    "ClaimDecision",
    "ClaimResult",
    "ClaimedRun",
    "Completion",
    "CompletionResult",
    "RecoveryResult",
    "Row",
    "SqlClaimBackend",
    "SqliteClaimBackend",
    "burst_size",
    "catch_up",
    "check_running",
    "claim_backend_for",
    "claim_due",
    "complete_runs",
    "end_expired",
    "prune_runs",
    "record_process_group",
    "recover_expired",
    "renew_leases",
    "soonest_burst",
    "step",
]


def step(engine: Engine, **kwargs: Any) -> tuple[ClaimResult, list[CompletionResult]]:
    """:meth:`SqlClaimBackend.step` on ``engine``'s backend."""
    return claim_backend_for(engine).step(**kwargs)


def claim_due(
    engine: Engine,
    *,
    owner: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    decide: Callable[[Row], ClaimDecision],
    overlap_next: Callable[[Row], datetime | None] | None = None,
    check_overlaps: bool = False,
) -> ClaimResult:
    """Claim up to ``limit`` due intents, in one transaction (a :func:`step` without
    outcomes). With ``check_overlaps``, this owner's ``firing`` rows whose next due
    time passed are first recorded as ``skipped`` runs (reason ``overlap``) and advanced
    by ``overlap_next``."""
    result, _ = claim_backend_for(engine).step(
        owner=owner,
        now=now,
        lease_until=lease_until,
        limit=limit,
        decide=decide,
        overlap_next=overlap_next,
        check_overlaps=check_overlaps,
    )
    return result


def complete_runs(
    engine: Engine,
    *,
    owner: str,
    now: datetime,
    items: Sequence[Completion],
    decide: Callable[[Row, Completion], AfterDecision],
) -> list[CompletionResult]:
    """:meth:`SqlClaimBackend.complete_runs` on ``engine``'s backend."""
    return claim_backend_for(engine).complete_runs(owner=owner, now=now, items=items, decide=decide)


def recover_expired(engine: Engine, **kwargs: Any) -> RecoveryResult:
    """:meth:`SqlClaimBackend.recover_expired` on ``engine``'s backend."""
    return claim_backend_for(engine).recover_expired(**kwargs)


def record_process_group(engine: Engine, run_id: int, host: str, pgid: int) -> bool:
    """Store where a running run's process group lives (the scheduler calls it right
    after the runner started); False if the run is no longer running."""
    return claim_backend_for(engine).record_process_group(run_id, host, pgid)


def renew_leases(
    engine: Engine, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
) -> dict[int, str]:
    """Extend this owner's leases; returns ``{intent_id: status}`` of the rows still ours."""
    return claim_backend_for(engine).renew_leases(
        owner=owner, intent_ids=intent_ids, lease_until=lease_until
    )


def check_running(engine: Engine, intent_ids: Sequence[int]) -> dict[int, Row]:
    """Status, lease owner and next due time of the given intents (a cheap read)."""
    return claim_backend_for(engine).check_running(intent_ids)


def soonest_burst(engine: Engine, probe: BurstProbe | None = None) -> tuple[datetime | None, int]:
    """``min(next_run_at)`` of the active intents and the burst due with it."""
    return claim_backend_for(engine).soonest_burst(probe)


def end_expired(engine: Engine, *, now: datetime) -> list[Row]:
    """Active or paused intents past ``expires_at`` become ``done``; returns them."""
    return claim_backend_for(engine).end_expired(now=now)


def catch_up(engine: Engine, **kwargs: Any) -> list[tuple[Row, CatchUpPlan]]:
    """:meth:`SqlClaimBackend.catch_up` on ``engine``'s backend."""
    return claim_backend_for(engine).catch_up(**kwargs)


def prune_runs(engine: Engine, *, before: datetime, batch: int = 5000) -> list[Row]:
    """Delete finished runs that started before ``before``; returns (id, output_path)."""
    return claim_backend_for(engine).prune_runs(before=before, batch=batch)
