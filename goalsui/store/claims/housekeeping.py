"""The scheduler's housekeeping statements: leases, process groups, expiry, catch-up, pruning.

Each function here runs inside the caller's transaction (journal lines go to the caller's
list), except :func:`prune_runs`, which deletes in batches, one transaction each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, select, update
from sqlalchemy.engine import Connection, Engine

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store.claims.binds import INTENT, RUN, rows
from goalsui.store.claims.planner import JournalEntry, new_run, subject
from goalsui.store.claims.shapes import CatchUpPlan, Row


def renew_leases(
    conn: Connection, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
) -> dict[int, str]:
    """Extend this owner's leases; returns ``{intent_id: status}`` of the rows still ours."""
    result = conn.execute(
        update(INTENT)
        .where(INTENT.c.id.in_(list(intent_ids)), INTENT.c.lease_owner == owner)
        .values(lease_until=lease_until)
        .returning(INTENT.c.id, INTENT.c.status)
    )
    return {r.id: r.status for r in result}


def record_process_group(conn: Connection, run_id: int, host: str, pgid: int) -> bool:
    """Store where a running run's process group lives; False if the run is not running."""
    hit = conn.execute(
        update(RUN)
        .where(RUN.c.id == run_id, RUN.c.status == RunStatus.RUNNING)
        .values(host=host[:255], pgid=int(pgid))
        .returning(RUN.c.id)
    ).first()
    return hit is not None


def end_expired_rows(conn: Connection, journal: list[JournalEntry], *, now: datetime) -> list[Row]:
    """Active or paused intents past ``expires_at`` become ``done``; returns them."""
    ended = rows(
        conn.execute(
            update(INTENT)
            .where(
                INTENT.c.status.in_([IntentStatus.ACTIVE, IntentStatus.PAUSED]),
                INTENT.c.expires_at.is_not(None),
                INTENT.c.expires_at <= now,
            )
            .values(status=IntentStatus.DONE, next_run_at=None, updated_at=now)
            .returning(INTENT.c.id, INTENT.c.title)
        )
    )
    journal.extend(("intent done", subject(r), f"{r['title']}: expired") for r in ended)
    return ended


def catch_up_rows(
    conn: Connection,
    journal: list[JournalEntry],
    *,
    now: datetime,
    overdue_before: datetime,
    kinds: Sequence[str],
    plan: Callable[[Row], CatchUpPlan | None],
    limit_text: str,
) -> tuple[list[tuple[Row, CatchUpPlan]], list[Row]]:
    """Apply the catch-up rule to active rows overdue since before ``overdue_before``;
    returns the rows changed with their plans, and the ``missed`` runs to insert.

    Rows a user made due (run-now, retry, event) are left alone. Each row is updated
    with a compare-and-set on its old ``next_run_at``, so a scheduler that claims it
    meanwhile wins.
    """
    overdue = rows(
        conn.execute(
            select(INTENT).where(
                INTENT.c.status == IntentStatus.ACTIVE,
                INTENT.c.next_run_at < overdue_before,
                INTENT.c.pending_trigger.is_(None),
                INTENT.c.kind.in_(list(kinds)),
            )
        )
    )
    done: list[tuple[Row, CatchUpPlan]] = []
    missed_runs: list[Row] = []
    for row in overdue:
        p = plan(row)
        if p is None or not _apply_plan(conn, row, p, now):
            continue
        missed_runs.extend(_missed_runs(row, p, now, limit_text))
        journal.extend(_catch_up_journal(row, p, limit_text))
        done.append((row, p))
    return done, missed_runs


def update_intent_if(conn: Connection, row: Row, condition: Any, values: Row) -> bool:
    """Set ``values`` on the intent ``row`` if ``condition`` still holds (a compare-and-set);
    True if it did, and then ``row`` holds them too."""
    hit = conn.execute(
        update(INTENT)
        .where(INTENT.c.id == row["id"], condition)
        .values(values)
        .returning(INTENT.c.id)
    ).first()
    if hit is None:
        return False
    row.update(values)
    return True


def _apply_plan(conn: Connection, row: Row, p: CatchUpPlan, now: datetime) -> bool:
    """The plan's compare-and-set on the row's old ``next_run_at``; True if it hit."""
    values: Row = {"updated_at": now}
    if p.fire_at is not None:
        values.update(next_run_at=p.fire_at, pending_trigger="catch-up")
    else:
        values.update(next_run_at=p.next_run_at, status=p.status)
    still = and_(INTENT.c.status == IntentStatus.ACTIVE, INTENT.c.next_run_at == row["next_run_at"])
    return update_intent_if(conn, row, still, values)


def _missed_runs(row: Row, p: CatchUpPlan, now: datetime, limit_text: str) -> list[Row]:
    out = []
    for i, when in enumerate(p.missed):
        last = i == len(p.missed) - 1
        extra = f"; {p.more_missed} more not listed" if p.more_missed and last else ""
        out.append(
            new_run(
                intent_id=row["id"],
                attempt=row["attempts"],
                trigger="catch-up",
                status=RunStatus.MISSED,
                reason=f"overdue by more than the catch-up limit ({limit_text}) at start{extra}",
                planned_at=when,
                started_at=now,
                finished_at=now,
            )
        )
    return out


def _catch_up_journal(row: Row, p: CatchUpPlan, limit_text: str) -> list[JournalEntry]:
    out: list[JournalEntry] = []
    if p.missed:
        total = len(p.missed) + p.more_missed
        detail = f"{row['title']}: {total} occurrence(s) older than {limit_text}"
        out.append(("run missed", subject(row), detail))
    if p.fire_at is not None:
        detail = f"{row['title']}: {p.coalesced} missed occurrence(s) fire once"
        out.append(("catch-up", subject(row), detail))
    return out


def prune_runs(engine: Engine, *, before: datetime, batch: int = 5000) -> list[Row]:
    """Delete finished runs that started before ``before``; returns (id, output_path)."""
    removed: list[Row] = []
    while True:
        with engine.begin() as conn:
            q = select(RUN.c.id, RUN.c.output_path).where(
                RUN.c.started_at < before, RUN.c.status != RunStatus.RUNNING
            )
            found = rows(conn.execute(q.limit(batch)))
            removed.extend(found)
            if found:
                conn.execute(delete(RUN).where(RUN.c.id.in_([r["id"] for r in found])))
        if len(found) < batch:
            return removed
