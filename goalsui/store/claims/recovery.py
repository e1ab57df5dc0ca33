"""Recovery of runs left by a dead scheduler (its lease expired).

Two steps. First, outside any transaction (killing takes seconds; no write lock is held
across it): the runs to recover whose process group lives on THIS host are killed, the
whole group, SIGTERM then SIGKILL (:mod:`goalsui.store.processes`); a run whose group
survives is left as it is and its intent is not retried (the next sweep tries again).
A group on another host cannot be checked from here: its run is recovered when its lease
expires, as before. A lease that lapsed while its owner still lives on this host (a slow
scheduler, not a dead one) is not recovered at all: its owner renews it or records the
outcome itself. Second, in one transaction: each stale intent's open run is closed
``interrupted`` and the intent follows its interrupt policy
(:func:`goalsui.domain.interrupts.interrupt_policy`): the retry rule, or held for review.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, not_, or_, select, update
from sqlalchemy.engine import Connection, Engine

from goalsui.domain.interrupts import REVIEW, interrupt_policy
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store import processes
from goalsui.store.claims.binds import INTENT, RUN, rows
from goalsui.store.claims.housekeeping import update_intent_if
from goalsui.store.claims.planner import JournalEntry, after_outcome, new_run, subject
from goalsui.store.claims.shapes import AfterDecision, Completion, RecoveryResult, Row
from goalsui.store.claims.statements import AFTER_COLUMNS

REASON = "interrupted: the scheduler running it stopped (lease expired)"
#: ``kill(pgid) -> gone``: ends a process group (tests pass a shorter grace).
Killer = Callable[[int], bool]


def _stale(now: Any) -> Any:
    """Intents left ``firing`` whose lease expired."""
    return and_(
        INTENT.c.status == IntentStatus.FIRING,
        or_(INTENT.c.lease_until.is_(None), INTENT.c.lease_until < now),
    )


def _orphaned(owner: Any, now: Any) -> Any:
    """Runs of another owner whose lease lapsed while their intent moved on."""
    lease_ok = and_(
        INTENT.c.lease_owner == RUN.c.owner,
        INTENT.c.lease_until.is_not(None),
        INTENT.c.lease_until >= now,
    )
    return and_(or_(RUN.c.owner.is_(None), RUN.c.owner != owner), not_(lease_ok))


def live_owners(engine: Engine, *, owner: str, now: datetime, host: str) -> set[str]:
    """The owners of lapsed leases and orphaned runs that still live on ``host``.

    Their runs are not recovered: a lease lapses when its scheduler is slow as well as
    when it is dead, and only a dead one's work may run again (see
    :func:`goalsui.store.processes.owner_alive_here`).
    """
    stale = select(INTENT.c.lease_owner).where(_stale(now)).distinct()
    orphaned = (
        select(RUN.c.owner)
        .select_from(RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id))
        .where(RUN.c.status == RunStatus.RUNNING, _orphaned(owner, now))
        .distinct()
    )
    with engine.connect() as conn:
        found = set(conn.execute(stale).scalars()) | set(conn.execute(orphaned).scalars())
    return {o for o in found if processes.owner_alive_here(o, me=owner, host=host)}


def end_live_groups(
    engine: Engine,
    result: RecoveryResult,
    *,
    owner: str,
    now: datetime,
    host: str,
    kill: Killer,
    live: Collection[str] = (),
) -> set[int]:
    """Kill the live process groups on ``host`` of the runs about to be recovered; returns
    the ids of the runs whose group survived (they must not be recovered yet). Runs of an
    owner in ``live`` are not about to be recovered."""
    q = (
        select(RUN.c.id, RUN.c.intent_id, RUN.c.host, RUN.c.pgid, RUN.c.started_at, RUN.c.owner)
        .select_from(RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id))
        .where(
            RUN.c.status == RunStatus.RUNNING,
            RUN.c.pgid.is_not(None),
            RUN.c.host == host,
            or_(_stale(now), _orphaned(owner, now)),
        )
    )
    with engine.connect() as conn:
        candidates = rows(conn.execute(q))
    alive: set[int] = set()
    for run in candidates:
        if run["owner"] in live:
            continue
        pgid = int(run["pgid"])
        if not processes.group_alive(pgid) or not processes.group_is_the_runs(
            pgid, run["started_at"]
        ):
            continue
        if kill(pgid):
            result.killed.append(run)
        else:
            alive.add(run["id"])
            result.alive.append(run)
    return alive


def recover_stale(
    conn: Connection,
    result: RecoveryResult,
    journal: list[JournalEntry],
    *,
    now: datetime,
    decide: Callable[[Row, Completion], AfterDecision],
    lock: Callable[[Any], Any],
    alive: set[int],
    live: Collection[str] = (),
) -> None:
    """Close the open runs of stale intents ``interrupted`` and apply the policy.

    ``lock`` adds the engine's row locks (skipping rows another recovery holds); an
    intent with a run in ``alive``, or leased by an owner in ``live``, is left ``firing``.
    """
    stale = rows(conn.execute(lock(select(INTENT).where(_stale(now)))))
    held = set(conn.execute(select(RUN.c.intent_id).where(RUN.c.id.in_(list(alive)))).scalars())
    for row in stale:
        if row["id"] in held or row.get("lease_owner") in live:
            continue
        review = interrupt_policy(row.get("on_interrupt"), row.get("runner")) == REVIEW
        runs = rows(
            conn.execute(
                update(RUN)
                .where(RUN.c.intent_id == row["id"], RUN.c.status == RunStatus.RUNNING)
                .values(
                    status=RunStatus.INTERRUPTED,
                    reason=REASON,
                    finished_at=now,
                    needs_review=review,
                )
                .returning(*RUN.c)
            )
        )
        run = runs[-1] if runs else new_run(id=None, intent_id=row["id"], event_id=None)
        c = Completion(
            run_id=run.get("id") or 0,
            intent_id=row["id"],
            status=RunStatus.INTERRUPTED,
            reason=REASON,
            snapshot=(row["kind"], row["schedule"], row["timezone"]),
            event_id=run.get("event_id"),
        )
        decision = after_outcome(row, c, decide)
        values = {k: decision.values.get(k, row[k]) for k in AFTER_COLUMNS}
        values["updated_at"] = now
        if not update_intent_if(conn, row, _stale(now), values):
            continue  # no longer stale
        journal.extend(("run interrupted", subject(row), f"run {r['id']}: {REASON}") for r in runs)
        journal.extend((a, subject(row), d) for a, d in decision.journal)
        result.interrupted.append((row, run, decision))


def close_orphans(
    conn: Connection,
    result: RecoveryResult,
    journal: list[JournalEntry],
    *,
    owner: str,
    now: datetime,
    alive: Sequence[int] | set[int],
    live: Collection[str] = (),
) -> None:
    """Close runs left ``running`` whose owner lost its lease while their intent moved on
    (``cancelled`` if the intent was cancelled, else ``interrupted``); not those of an
    owner in ``live``."""
    found = rows(
        conn.execute(
            select(RUN.c.id, RUN.c.intent_id, RUN.c.owner, INTENT.c.status.label("intent_status"))
            .select_from(RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id))
            .where(RUN.c.status == RunStatus.RUNNING, _orphaned(owner, now))
        )
    )
    for o in found:
        if o["id"] in alive or o["owner"] in live:
            continue
        cancelled = o["intent_status"] == IntentStatus.CANCELLED
        status = RunStatus.CANCELLED if cancelled else RunStatus.INTERRUPTED
        why = "cancelled; the scheduler running it stopped" if cancelled else REASON
        n = conn.execute(
            update(RUN)
            .where(RUN.c.id == o["id"], RUN.c.status == RunStatus.RUNNING)
            .values(status=status, reason=why, finished_at=now)
            .returning(RUN.c.id)
        ).first()
        if n is not None:
            o["status"] = status
            result.orphans.append(o)
            journal.append((f"run {status}", f"intent {o['intent_id']}", f"run {o['id']}: {why}"))


def release_leases(conn: Connection, now: datetime) -> None:
    """Drop leases left on rows that are no longer firing (cancelled while running, owner
    gone)."""
    conn.execute(
        update(INTENT)
        .where(
            INTENT.c.status != IntentStatus.FIRING,
            INTENT.c.lease_owner.is_not(None),
            INTENT.c.lease_until < now,
        )
        .values(lease_owner=None, lease_until=None)
    )


def _exists(where: Any, *, join: bool) -> Any:
    source = RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id) if join else INTENT
    column = RUN.c.id if join else INTENT.c.id
    return select(select(column).select_from(source).where(where).exists())


# Built once, with bound parameters: building them per sweep costs more than running them.
_NOW = bindparam("now", type_=INTENT.c.lease_until.type)
_ANY_STALE = _exists(_stale(_NOW), join=False)
_ANY_ORPHANED = _exists(
    and_(RUN.c.status == RunStatus.RUNNING, _orphaned(bindparam("owner"), _NOW)), join=True
)


def nothing_to_recover(engine: Engine, *, owner: str, now: datetime) -> bool:
    """True when no intent is firing past its lease and no run is orphaned: then a sweep
    is two indexed reads, with no write transaction (an idle scheduler sweeps every few
    seconds). Leases left on rows no longer firing do not count: claims ignore them, and
    the next recovery that does run releases them."""
    with engine.connect() as conn:
        if conn.execute(_ANY_STALE, {"now": now}).scalar():
            return False
        return not conn.execute(_ANY_ORPHANED, {"now": now, "owner": owner}).scalar()
