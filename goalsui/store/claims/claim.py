"""The claim: select due rows, compare-and-set them, insert their runs (one transaction).

These functions run inside the caller's transaction and append their journal lines to
the caller's list; :mod:`goalsui.store.claims.backend` owns the transactions.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store.claims.binds import EVENT, INTENT, rows
from goalsui.store.claims.planner import (
    JournalEntry,
    claimed_runs,
    overlap_lines,
    overlap_run,
    plan_claims,
    subject,
)
from goalsui.store.claims.primitives import SqlPrimitives
from goalsui.store.claims.shapes import (
    CLAIM_BATCH,
    BurstProbe,
    ClaimAction,
    Claimed,
    ClaimResult,
    ClaimRules,
    Row,
)


class LostRace(Exception):
    """The compare-and-set missed rows it had selected: nothing of the batch is kept."""


def claim_rows(
    p: SqlPrimitives,
    conn: Connection,
    result: ClaimResult,
    journal: list[JournalEntry],
    owner: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    due_by: datetime,
    rules: ClaimRules,
) -> None:
    """Claim up to ``limit`` rows due by ``due_by`` into ``result``.

    The due rows are selected (row-locked, skipping rows locked by others, where the
    engine can; under the write lock on SQLite), the rules say fire / skip / end for
    each, and each row is claimed with the compare-and-set ``UPDATE intent SET
    status='firing', lease_owner=?, ... WHERE id=? AND status='active' AND
    next_run_at<=? AND next_run_at=<as selected>``. Raises :class:`LostRace` if a row
    changed in between (then the caller's transaction rolls back).
    """
    if limit <= 0:
        return
    batch = min(limit, CLAIM_BATCH)
    due, due_values = p.select_due(conn, due_by, batch)
    if not due:
        return
    result.full = len(due) >= batch
    plan = plan_claims(
        due,
        due_values,
        lambda row: rules.decide_claim(row, now),
        owner=owner,
        now=now,
        lease_until=lease_until,
        stamp=p.stamp,
    )
    hit = p.cas(conn, plan.cas, now, due_by)
    if hit != len(plan.cas):
        # A row changed between our select and update (not possible under SQLite's
        # write lock or PostgreSQL's row locks): roll the whole batch back.
        raise LostRace(hit, len(plan.cas))
    run_rows, kept, ended, lines = claimed_runs(plan, owner=owner, now=now)
    result.ended.extend(ended)
    journal.extend(lines)
    runs = p.insert_runs(conn, run_rows)
    events = _events_of(conn, runs)
    for (row, d), run in zip(kept, runs, strict=True):
        item = Claimed(row, run, events.get(run["event_id"]), d)
        if d.action == ClaimAction.FIRE:
            result.fired.append(item)
            journal.append(
                ("run started", subject(row), f"run {run['id']}: {row['title']} ({d.trigger})")
            )
        else:
            result.skipped.append(item)
            journal.append(
                ("run skipped", subject(row), f"run {run['id']}: {row['title']}: {d.reason}")
            )


def _events_of(conn: Connection, runs: list[Row]) -> dict[int, Row]:
    """The events that made these ``running`` runs due, by id."""
    ids = {
        r["event_id"]
        for r in runs
        if r["event_id"] is not None and r["status"] == RunStatus.RUNNING
    }
    if not ids:
        return {}
    return {e["id"]: e for e in rows(conn.execute(select(EVENT).where(EVENT.c.id.in_(ids))))}


def record_overlaps(
    p: SqlPrimitives,
    conn: Connection,
    journal: list[JournalEntry],
    *,
    owner: str,
    now: datetime,
    overlap_next: Callable[[Row, datetime], datetime | None],
) -> list[Row]:
    """This owner's ``firing`` rows whose next due time passed: a ``skipped: overlap``
    run each, and the row advanced by ``overlap_next``; returns the runs."""
    firing = rows(
        conn.execute(
            select(INTENT).where(
                INTENT.c.status == IntentStatus.FIRING,
                INTENT.c.next_run_at <= now,
                INTENT.c.lease_owner == owner,
            )
        )
    )
    runs = []
    for row in firing:
        conn.execute(
            update(INTENT)
            .where(INTENT.c.id == row["id"], INTENT.c.next_run_at == row["next_run_at"])
            .values(next_run_at=overlap_next(row, now), updated_at=now)
        )
        runs.append(overlap_run(row, row["next_run_at"], owner=owner, now=now))
    inserted = p.insert_runs(conn, runs)
    journal.extend(overlap_lines(inserted))
    return inserted


def burst_size(conn: Connection, soonest: datetime | None, probe: BurstProbe | None) -> int:
    """How many active intents fall due by ``soonest + probe.window``, counted up to
    ``probe.limit`` (a range of the ``(status, next_run_at)`` index, never more than
    ``limit`` entries); 0 when not asked or ``soonest`` is after ``probe.by``.

    A scheduler with that many free slots claims such a burst early enough for its
    claims to be done when the burst is due.
    """
    if probe is None or soonest is None or soonest > probe.by or probe.limit <= 0:
        return 0
    near = (
        select(INTENT.c.id)
        .where(
            INTENT.c.status == IntentStatus.ACTIVE,
            INTENT.c.next_run_at <= soonest + probe.window,
        )
        .limit(probe.limit)
        .subquery()
    )
    return int(conn.execute(select(func.count()).select_from(near)).scalar() or 0)
