"""Recording outcomes: the run rows, then the intents the rules change (one transaction).

These functions run inside the caller's transaction and append their journal lines to
the caller's list; :mod:`goalsui.store.claims.backend` owns the transactions (and the
fallback to one transaction per outcome when a batch fails).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.engine import Connection

from goalsui.domain.states import IntentStatus
from goalsui.store.claims.binds import INTENT
from goalsui.store.claims.planner import JournalEntry, overlap_lines, plan_completions, run_outcomes
from goalsui.store.claims.primitives import SqlPrimitives
from goalsui.store.claims.shapes import AfterDecision, Completion, CompletionResult, Row
from goalsui.store.claims.statements import AFTER_READ


def complete(
    p: SqlPrimitives,
    conn: Connection,
    journal: list[JournalEntry],
    *,
    owner: str,
    now: datetime,
    items: Sequence[Completion],
    decide: Callable[[Row, Completion], AfterDecision],
) -> list[CompletionResult]:
    """Record ``items`` and apply ``decide`` to the intents still ours and ``firing``.

    A run closed meanwhile (recovered by another scheduler) keeps its record; an intent
    that is no longer ours keeps its state (a cancel that happened meanwhile wins).
    """
    ids = sorted({c.intent_id for c in items})
    found = p.read_intents(conn, ids, AFTER_READ, lock=True)
    # A run closed meanwhile keeps its record.
    open_ids = p.open_runs(conn, [c.run_id for c in items])
    plan = plan_completions(
        {r["id"]: r for r in found}, items, decide, owner=owner, now=now, open_ids=open_ids
    )
    p.close_runs(conn, run_outcomes(plan, now))
    p.update_after(conn, plan.intent_updates, owner)
    if plan.release:
        conn.execute(
            update(INTENT)
            .where(
                INTENT.c.id.in_(plan.release),
                INTENT.c.lease_owner == owner,
                INTENT.c.status != IntentStatus.FIRING,
            )
            .values(lease_owner=None, lease_until=None)
        )
    journal.extend(plan.journal)
    journal.extend(overlap_lines(p.insert_runs(conn, plan.overlap_runs)))
    return plan.results
