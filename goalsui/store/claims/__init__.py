"""The scheduler's statements: claim, lease, overlap, completion, recovery, catch-up, pruning.

One :class:`~goalsui.store.claims.backend.ClaimBackend` per engine
(:class:`SqlClaimBackend`; the cycle is ``acquire``, ``release``, ``recover``, ``prune``)
runs them: SQLAlchemy Core on the generic SQL backend (row locks with ``FOR UPDATE
[SKIP LOCKED]`` where the dialect has them, PostgreSQL), the
DBAPI cursor on the SQLite one (under ``BEGIN IMMEDIATE``). Every operation is ONE
short transaction on the writer engine, so that several schedulers on one database
never fire the same occurrence. An ORM session per claim is about 7x slower.

The rules (what to do with a due row, how an outcome changes an intent) are not here:
a backend is built with a :class:`ClaimRules` object (the scheduler's is
:class:`goalsui.scheduler.rules.Rules`), which sees each row as a plain ``dict`` and
returns what to write; its decisions are :class:`ClaimAction` enums; a claimed row comes
back as a frozen :class:`Claimed`. The pure part of
turning rows and decisions into values to write is :mod:`goalsui.store.claims.planner`.

Modules: ``shapes`` (values exchanged with the scheduler), ``binds`` and ``statements``
(Core plumbing), ``planner`` (pure), ``primitives`` (statements per kind of engine),
``claim``, ``complete``, ``recovery``, ``housekeeping`` (the steps), ``backend``.
"""

from __future__ import annotations

from goalsui.store.claims.backend import ClaimBackend, SqlClaimBackend
from goalsui.store.claims.binds import INTENT, RUN
from goalsui.store.claims.shapes import (
    CLAIM_BATCH,
    JOURNAL_DETAIL_LIMIT,
    RELEASED,
    AfterDecision,
    BurstProbe,
    CatchUpPlan,
    ClaimAction,
    ClaimDecision,
    Claimed,
    ClaimResult,
    ClaimRules,
    Completion,
    CompletionResult,
    RecoveryResult,
)

__all__ = [
    "CLAIM_BATCH",
    "INTENT",
    "JOURNAL_DETAIL_LIMIT",
    "RELEASED",
    "RUN",
    "AfterDecision",
    "BurstProbe",
    "CatchUpPlan",
    "ClaimAction",
    "ClaimBackend",
    "ClaimDecision",
    "ClaimResult",
    "ClaimRules",
    "Claimed",
    "Completion",
    "CompletionResult",
    "RecoveryResult",
    "SqlClaimBackend",
]
