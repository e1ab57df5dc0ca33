"""The scheduler's statements: claim, lease, overlap, completion, recovery, catch-up, pruning.

SQLAlchemy Core on the hot path (an ORM session per claim is ~7x slower, docs/architecture.md).
Every function runs ONE short transaction on the writer engine (``BEGIN IMMEDIATE`` on
SQLite; row locks with ``FOR UPDATE [SKIP LOCKED]`` on PostgreSQL), so that several
schedulers on one database never fire the same occurrence.

The rules (what to do with a due row, how an outcome changes an intent) are not here:
callers pass them in as ``decide`` callbacks (see :mod:`goalsui.scheduler.rules`), which
see each row as a plain ``dict`` and return what to write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import (
    DateTime,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    not_,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.types import TypeDecorator

from goalsui.domain.models import Event, Intent, IntentRun, Journal, UTCDateTime
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store import sqlite_hot

INTENT = Intent.__table__
RUN = IntentRun.__table__
JOURNAL = Journal.__table__
EVENT = Event.__table__

#: Rows claimed per transaction (SQLite statements are chunked; psycopg takes this many).
CLAIM_BATCH = 500
#: A batch with more journal lines of one action than this gets one summary line.
JOURNAL_DETAIL_LIMIT = 20

Row = dict[str, Any]

__all__ = [
    "CLAIM_BATCH",
    "AfterDecision",
    "BurstProbe",
    "CatchUpPlan",
    "ClaimDecision",
    "ClaimResult",
    "ClaimedRun",
    "Completion",
    "CompletionResult",
    "RecoveryResult",
    "burst_size",
    "catch_up",
    "check_running",
    "claim_due",
    "complete_runs",
    "end_expired",
    "prune_runs",
    "recover_expired",
    "renew_leases",
    "soonest_burst",
    "step",
]


# -- shapes ---------------------------------------------------------------------------------
@dataclass
class ClaimDecision:
    """What to do with one claimed row (returned by the claim ``decide`` callback)."""

    action: str  # fire | skip | end
    trigger: str
    planned_at: datetime | None
    next_run_at: datetime | None  # the next due time once this occurrence is dealt with
    reason: str | None = None  # for skip / end
    end_status: str = IntentStatus.DONE  # the intent status after skip-with-no-next / end
    count_fire: bool = True  # fire: does it count toward max_fires?


@dataclass
class ClaimedRun:
    intent: Row  # the intent row as it is after the claim
    run: Row  # the run row as inserted (with its id)
    event: Row | None
    decision: ClaimDecision


@dataclass
class ClaimResult:
    fired: list[ClaimedRun] = field(default_factory=list)
    skipped: list[ClaimedRun] = field(default_factory=list)  # quiet hours, empty checklist
    overlaps: list[Row] = field(default_factory=list)  # skipped-overlap runs recorded
    ended: list[tuple[Row, str]] = field(default_factory=list)  # (intent, reason): no run
    full: bool = False  # the batch was full: more rows may be due
    soonest: datetime | None = None  # min(next_run_at) of the active rows after the claim
    burst: int = 0  # active rows due within the burst window of ``soonest`` (capped)


class Completion(NamedTuple):
    """How a turn ended, as the scheduler records it (immutable; a named tuple because
    one is made per fire and a frozen dataclass costs six times as much to build)."""

    run_id: int
    intent_id: int
    status: str
    reason: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    output_path: str | None = None
    snapshot: tuple = ()  # (kind, schedule, timezone) when the run was claimed
    event_id: int | None = None


@dataclass
class AfterDecision:
    """How an intent changes after an outcome (returned by the completion ``decide``)."""

    values: Row  # columns to set on the intent
    overlaps: list[datetime] = field(default_factory=list)  # occurrences that passed meanwhile
    failure: bool = False
    auto_disabled: bool = False
    journal: list[tuple[str, str]] = field(default_factory=list)  # (action, detail)


@dataclass
class CompletionResult:
    completion: Completion
    run_status: str  # what was recorded on the run (may differ: a cancel wins)
    recorded: bool  # the run row was still ``running`` and got this outcome
    applied: bool  # the intent was still ours and the rules were applied
    intent: Row | None  # the intent after the completion (None if it is gone)
    decision: AfterDecision | None


@dataclass
class RecoveryResult:
    interrupted: list[tuple[Row, Row, AfterDecision]] = field(
        default_factory=list
    )  # intent, run, after
    orphans: list[Row] = field(default_factory=list)  # runs closed whose intent moved on


@dataclass
class CatchUpPlan:
    missed: list[datetime]  # occurrences recorded ``missed``
    fire_at: datetime | None  # fire once (trigger catch-up) planned at this occurrence
    next_run_at: datetime | None
    status: str = IntentStatus.ACTIVE
    more_missed: int = 0  # missed occurrences not recorded one by one
    coalesced: int = 0  # occurrences inside the limit folded into the one fire


# -- helpers ------------------------------------------------------------------------------------
def _is_pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _rows(result: Any) -> list[Row]:
    return [dict(r._mapping) for r in result]


_JOURNAL_KEY = "goalsui.claims.journal"


def _journal(conn: Connection, now: datetime, entries: Iterable[tuple[str, str, str]]) -> None:
    """Journal lines (actor ``scheduler``); a big batch of one action becomes one line.

    Inside :func:`step` the lines are collected and written once, at its end.
    """
    entries = list(entries)
    collected = conn.info.get(_JOURNAL_KEY)
    if collected is not None:
        collected.extend(entries)
        return
    if not entries:
        return
    by_action: dict[str, list[tuple[str, str, str]]] = {}
    for entry in entries:
        by_action.setdefault(entry[0], []).append(entry)
    rows = []
    for action, group in by_action.items():
        if len(group) > JOURNAL_DETAIL_LIMIT:
            sample = "; ".join(f"{s}: {d}" for _, s, d in group[:3])
            rows.append(
                {
                    "at": now,
                    "actor": "scheduler",
                    "action": action,
                    "subject": f"{len(group)} intents",
                    "detail": f"{len(group)} x {action} in one batch, e.g. {sample}; ...",
                }
            )
        else:
            rows.extend(
                {"at": now, "actor": "scheduler", "action": a, "subject": s, "detail": d}
                for a, s, d in group
            )
    if conn.dialect.name == "sqlite":
        sqlite_hot.insert_journal(sqlite_hot.cursor(conn), rows)
    else:
        conn.execute(insert(JOURNAL), rows)


class _Stamp(TypeDecorator):
    """Binds an aware datetime exactly as :class:`UTCDateTime` stores it, in one step.

    On SQLite that is the text ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC), so comparisons and
    equality with stored values hold; elsewhere the aware datetime itself. The hot path
    binds several timestamps per row; the generic two-stage conversion costs ~5x more.
    """

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None or dialect.name != "sqlite" or isinstance(value, str):
            return value  # (a str is already in the stored form: see _stamper)
        return _sqlite_text(value)


def _sqlite_text(value: datetime) -> str:
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:-6]  # drop "+00:00"


def _stamper(conn: Connection) -> Callable[[datetime | None], Any]:
    """Converts a timestamp to its bound form once (for values repeated on every row)."""
    if conn.dialect.name == "sqlite":
        return lambda value: None if value is None else _sqlite_text(value)
    return lambda value: value


def _bind(name: str, column: Any) -> Any:
    """A bind parameter for ``column`` (timestamps through :class:`_Stamp`)."""
    if isinstance(column.type, UTCDateTime):
        return bindparam(name, type_=_Stamp())
    return bindparam(name, type_=column.type)


def _columns(
    conn: Connection, table: Any, names: Sequence[str] | None = None
) -> tuple[list[Any], list[str]]:
    """The columns to select; on SQLite timestamps come back as text, parsed by :func:`_rows_of`.

    (SQLAlchemy's generic SQLite datetime parsing is a regex per value; on the hot path
    ``datetime.fromisoformat`` is an order of magnitude cheaper.)
    """
    cols = [table.c[n] for n in names] if names else list(table.c)
    if conn.dialect.name != "sqlite":
        return cols, []
    out: list[Any] = []
    stamps: list[str] = []
    for col in cols:
        if isinstance(col.type, UTCDateTime):
            out.append(type_coerce(col, String).label(col.name))
            stamps.append(col.name)
        else:
            out.append(col)
    return out, stamps


def _rows_of(result: Any, stamps: list[str]) -> list[Row]:
    rows = _rows(result)
    if stamps:
        parse = datetime.fromisoformat
        for row in rows:
            for key in stamps:
                value = row[key]
                if value is not None:
                    row[key] = parse(value + "+00:00")
    return rows


def _insert_runs(conn: Connection, rows: list[Row]) -> list[Row]:
    """Insert run rows; returns them with their ids (in the given order).

    On SQLite the transaction holds the write lock (``BEGIN IMMEDIATE``), so ids are
    assigned here (max + 1, ...) and the rows go in with one multi-row ``INSERT``; on
    PostgreSQL ``INSERT ... RETURNING`` in parameter order (insertmanyvalues). The
    returned rows are the given dicts, with their ``id`` set.
    """
    if not rows:
        return []
    if conn.dialect.name == "sqlite":
        return sqlite_hot.insert_runs(sqlite_hot.cursor(conn), rows)
    ids = (
        conn.execute(_RUN_INSERT.returning(RUN.c.id, sort_by_parameter_order=True), rows)
        .scalars()
        .all()
    )
    for row, run_id in zip(rows, ids, strict=True):
        row["id"] = run_id
    return rows


_RUN_COLUMNS = [c.name for c in RUN.c if c.name != "id"]
_RUN_INSERT = insert(RUN).values({n: _bind(n, RUN.c[n]) for n in _RUN_COLUMNS})

_RUN_DEFAULTS: Row = {
    "reason": None,
    "finished_at": None,
    "exit_code": None,
    "output_tail": None,
    "output_path": None,
    "event_id": None,
    "owner": None,
    "dismissed": False,
    "host": None,
    "pgid": None,
    "needs_review": False,
    "tokens_in": None,
    "tokens_out": None,
    "cost_usd": None,
    "model": None,
    "prompt": None,
    "argv": None,
}


def _run(**values: Any) -> Row:
    row = dict(_RUN_DEFAULTS)
    row.update(values)
    return row


def _subject(row: Row) -> str:
    return f"intent {row['id']}"


#: Rows with identical new values are updated with one ``... WHERE id IN (...)``
#: statement when at least this many share them; the others row by row (executemany).
GROUP_MIN = 3


def _apply(
    conn: Connection, rows: list[Row], *, per_row: Any, grouped: Any, skip: tuple[str, ...]
) -> int:
    """Run ``per_row`` (``id == :_id``) or ``grouped`` (``id IN :_ids``) updates; returns rows hit.

    ``skip``: parameters that are per row and left out of the grouped form (besides ``_id``).
    """
    if not rows:
        return 0
    groups: dict[tuple, list[Row]] = {}
    singles: list[Row] = []
    for row in rows:
        try:
            key = tuple(sorted((k, v) for k, v in row.items() if k != "_id" and k not in skip))
            groups.setdefault(key, []).append(row)
        except TypeError:  # an unhashable value: row by row
            singles.append(row)
    hit = 0
    for key, members in groups.items():
        if len(members) >= GROUP_MIN:
            params = dict(key)
            params["_ids"] = [m["_id"] for m in members]
            hit += conn.execute(grouped, params).rowcount
        else:
            singles.extend(members)
    if singles:
        hit += conn.execute(per_row, singles).rowcount
    return hit


# -- reads ----------------------------------------------------------------------------------------
class BurstProbe(NamedTuple):
    """Ask for the size of the burst due with the soonest row: the active rows due within
    ``window`` of it, counted up to ``limit``, when it is due by ``by`` (a burst further
    off is counted when it comes closer: an idle scheduler's poll stays one probe)."""

    window: timedelta
    limit: int
    by: datetime


def soonest_burst(engine: Engine, probe: BurstProbe | None = None) -> tuple[datetime | None, int]:
    """``min(next_run_at)`` of the active intents (one index probe), and the burst due
    with it (0 without a ``probe``)."""
    with engine.connect() as conn:
        soonest = conn.execute(_SOONEST).scalar()
        return soonest, burst_size(conn, soonest, probe)


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


def check_running(engine: Engine, intent_ids: Sequence[int]) -> dict[int, Row]:
    """Status, lease owner and next due time of the given intents (a cheap read)."""
    if not intent_ids:
        return {}
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            found = sqlite_hot.intents_by_id(
                sqlite_hot.cursor(conn), list(intent_ids), _RUNNING_READ
            )
            return {r["id"]: r for r in found}
        rows = conn.execute(
            select(INTENT.c.id, INTENT.c.status, INTENT.c.lease_owner, INTENT.c.next_run_at).where(
                INTENT.c.id.in_(list(intent_ids))
            )
        )
        return {r.id: dict(r._mapping) for r in rows}


_RUNNING_READ = ("id", "status", "lease_owner", "next_run_at")


# -- claim ----------------------------------------------------------------------------------------
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
    """Claim up to ``limit`` due intents, in one transaction.

    The due rows are selected (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; under the
    ``BEGIN IMMEDIATE`` write lock on SQLite), ``decide(row)`` says fire / skip / end for
    each, and each row is claimed with the compare-and-set
    ``UPDATE intent SET status='firing', lease_owner=?, lease_until=?, attempts=attempts+1
    ... WHERE id=? AND status='active' AND next_run_at<=?`` (one ``executemany``). The
    ``running`` (or ``skipped``) run rows and the journal lines go in the same
    transaction. A row another scheduler changed meanwhile is not claimed.

    With ``check_overlaps``, this owner's ``firing`` rows whose next due time passed are
    first recorded as ``skipped`` runs (reason ``overlap``) and advanced by ``overlap_next``.
    """
    result, _ = step(
        engine,
        owner=owner,
        now=now,
        lease_until=lease_until,
        limit=limit,
        decide=decide,
        overlap_next=overlap_next,
        check_overlaps=check_overlaps,
    )
    return result


def step(
    engine: Engine,
    *,
    owner: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    decide: Callable[[Row], ClaimDecision],
    completions: Sequence[Completion] = (),
    decide_after: Callable[[Row, Completion], AfterDecision] | None = None,
    overlap_next: Callable[[Row], datetime | None] | None = None,
    check_overlaps: bool = False,
    due_by: datetime | None = None,
    burst: BurstProbe | None = None,
) -> tuple[ClaimResult, list[CompletionResult]]:
    """One scheduler step in ONE transaction: record ``completions``, then claim due rows.

    Writing outcomes in the claim's transaction keeps claims from queueing behind
    separate completion commits (fire lateness) and halves the commits per fire.
    ``due_by`` (default ``now``) claims rows due up to that instant: a scheduler that
    looks a few milliseconds ahead starts their turns on time, on its own timer; their
    runs are recorded as starting at their due time.

    When nothing more is claimable by ``due_by``, the result also says how big the
    ``burst`` due with the soonest row is (see :class:`BurstProbe`).
    """
    if completions and decide_after is None:
        raise ValueError("completions need decide_after")
    try:
        with engine.begin() as conn:
            conn.info[_JOURNAL_KEY] = journal = []
            try:
                done = _complete(conn, owner, now, completions, decide_after) if completions else []  # type: ignore[arg-type]
                result = ClaimResult()
                if check_overlaps and overlap_next is not None:
                    result.overlaps = _record_overlaps(conn, owner, now, overlap_next)
                _claim_rows(conn, result, owner, now, lease_until, limit, decide, due_by or now)
                result.soonest = (
                    sqlite_hot.soonest(sqlite_hot.cursor(conn))
                    if conn.dialect.name == "sqlite"
                    else conn.execute(_SOONEST).scalar()
                )
                if result.soonest is not None and result.soonest > (due_by or now):
                    result.burst = burst_size(conn, result.soonest, burst)
            finally:
                conn.info.pop(_JOURNAL_KEY, None)
            _journal(conn, now, journal)
        return result, done
    except _LostRace:
        done = (
            complete_runs(engine, owner=owner, now=now, items=completions, decide=decide_after)
            if completions
            else []
        )  # type: ignore[arg-type]
        return ClaimResult(), done


class _LostRace(Exception):
    """The compare-and-set missed rows it had selected: nothing of the batch is kept."""


#: The soonest due time of the active intents (one probe of the (status, next_run_at) index).
_SOONEST = select(func.min(INTENT.c.next_run_at)).where(INTENT.c.status == IntentStatus.ACTIVE)


def _claim_rows(
    conn: Connection,
    result: ClaimResult,
    owner: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    decide: Callable[[Row], ClaimDecision],
    due_by: datetime,
) -> None:
    if limit <= 0:
        return
    batch = min(limit, CLAIM_BATCH)
    fast = sqlite_hot.cursor(conn) if conn.dialect.name == "sqlite" else None
    if fast is not None:
        rows, due_texts = sqlite_hot.select_due(fast, due_by, batch)
    else:
        cols, stamps = _columns(conn, INTENT)
        due = (
            select(*cols)
            .where(INTENT.c.status == IntentStatus.ACTIVE, INTENT.c.next_run_at <= due_by)
            .order_by(INTENT.c.next_run_at)
            .limit(batch)
        )
        if _is_pg(conn):
            due = due.with_for_update(skip_locked=True)
        rows = _rows_of(conn.execute(due), stamps)
        due_texts = [row["next_run_at"] for row in rows]
    if not rows:
        return
    result.full = len(rows) >= batch
    decisions = [(row, decide(row)) for row in rows]
    stamp = _stamper(conn)
    now_s, until_s = stamp(now), stamp(lease_until)
    # What every claimed row gets, and what a fired one gets besides: one dict update
    # each, at C speed.
    other = {
        "lease_owner": None,
        "lease_until": None,
        "pending_trigger": None,
        "pending_event_id": None,
        "updated_at": now,
    }
    fired = {
        **other,
        "status": IntentStatus.FIRING,
        "lease_owner": owner,
        "lease_until": lease_until,
        "last_fired_at": now,
    }
    cas: list[sqlite_hot.Cas] = []
    for (row, d), due_text in zip(decisions, due_texts, strict=True):
        row["_pending_event_id"] = row["pending_event_id"]
        nxt = d.next_run_at
        if d.action == "fire":
            fires = 1 if d.count_fire else 0
            cas.append(
                sqlite_hot.Cas(
                    row["id"], due_text, IntentStatus.FIRING, owner, until_s, 1, fires, nxt, now_s
                )
            )
            row.update(fired)
            row["attempts"] += 1
            row["fires"] += fires
        else:
            if d.action == "skip" and nxt is not None:
                status = IntentStatus.ACTIVE
            else:
                status, nxt = d.end_status, None
            cas.append(
                sqlite_hot.Cas(
                    row["id"], due_text, status, None, None, 0, 0, nxt, stamp(row["last_fired_at"])
                )
            )
            row.update(other)
            row["status"] = status
        row["next_run_at"] = nxt
    if fast is not None:
        hit = sqlite_hot.cas(fast, cas, now, due_by)
    else:
        hit = _apply(
            conn,
            [_cas_params(c, now_s, stamp(due_by)) for c in cas],
            per_row=_CAS,
            grouped=_CAS_GROUP,
            skip=("_due",),
        )
    if hit != len(cas):
        # A row changed between our select and update (not possible under SQLite's
        # write lock or PostgreSQL's row locks): roll the whole batch back.
        raise _LostRace(hit, len(cas))

    run_rows: list[Row] = []
    journal: list[tuple[str, str, str]] = []
    kept: list[tuple[Row, ClaimDecision]] = []
    for row, d in decisions:
        event_id = row.pop("_pending_event_id")
        if d.action == "end":
            result.ended.append((row, d.reason or "ended"))
            journal.append((f"intent {d.end_status}", _subject(row), f"{row['title']}: {d.reason}"))
            continue
        running = d.action == "fire"
        run_rows.append(
            _run(
                intent_id=row["id"],
                attempt=row["attempts"],
                trigger=d.trigger,
                status=RunStatus.RUNNING if running else RunStatus.SKIPPED,
                reason=None if running else d.reason,
                planned_at=d.planned_at,
                started_at=max(now, d.planned_at) if running and d.planned_at else now,
                finished_at=None if running else now,
                event_id=event_id,
                owner=owner,
            )
        )
        kept.append((row, d))
    runs = _insert_runs(conn, run_rows)
    event_ids = {
        r["event_id"]
        for r in runs
        if r["event_id"] is not None and r["status"] == RunStatus.RUNNING
    }
    events: dict[int, Row] = {}
    if event_ids:
        events = {
            e["id"]: e for e in _rows(conn.execute(select(EVENT).where(EVENT.c.id.in_(event_ids))))
        }
    for (row, d), run in zip(kept, runs, strict=True):
        item = ClaimedRun(intent=row, run=run, event=events.get(run["event_id"]), decision=d)
        if d.action == "fire":
            result.fired.append(item)
            journal.append(
                ("run started", _subject(row), f"run {run['id']}: {row['title']} ({d.trigger})")
            )
        else:
            result.skipped.append(item)
            journal.append(
                ("run skipped", _subject(row), f"run {run['id']}: {row['title']}: {d.reason}")
            )
    _journal(conn, now, journal)


def _cas_params(c: sqlite_hot.Cas, now: Any, due_by: Any) -> Row:
    """The bind parameters of :data:`_CAS` for one row."""
    return {
        "_id": c.id,
        "_due": c.due,
        "v_status": c.status,
        "v_owner": c.owner,
        "v_until": c.until,
        "v_attempts": c.attempts,
        "v_fires": c.fires,
        "v_next": c.next_run_at,
        "v_fired": c.fired_at,
        "_now": now,
        "_dueby": due_by,
    }


def _cas(by_id: Any, *extra: Any) -> Any:
    """The claim's compare-and-set ``UPDATE`` for ``by_id`` (one id or an IN list)."""
    return (
        update(INTENT)
        .where(
            by_id,
            INTENT.c.status == IntentStatus.ACTIVE,
            INTENT.c.next_run_at <= bindparam("_dueby", type_=_Stamp()),
            *extra,
        )
        .values(
            status=bindparam("v_status"),
            lease_owner=bindparam("v_owner"),
            lease_until=bindparam("v_until", type_=_Stamp()),
            attempts=INTENT.c.attempts + bindparam("v_attempts"),
            fires=INTENT.c.fires + bindparam("v_fires"),
            next_run_at=bindparam("v_next", type_=_Stamp()),
            last_fired_at=bindparam("v_fired", type_=_Stamp()),
            pending_trigger=None,
            pending_event_id=None,
            updated_at=bindparam("_now", type_=_Stamp()),
        )
    )


#: One compare-and-set per row (an executemany) ...
_CAS = _cas(
    INTENT.c.id == bindparam("_id"), INTENT.c.next_run_at == bindparam("_due", type_=_Stamp())
)
#: ... or one for a group of rows that get identical values.
_CAS_GROUP = _cas(INTENT.c.id.in_(bindparam("_ids", expanding=True)))


def _record_overlaps(
    conn: Connection, owner: str, now: datetime, overlap_next: Callable[[Row], datetime | None]
) -> list[Row]:
    rows = _rows(
        conn.execute(
            select(INTENT).where(
                INTENT.c.status == IntentStatus.FIRING,
                INTENT.c.next_run_at <= now,
                INTENT.c.lease_owner == owner,
            )
        )
    )
    if not rows:
        return []
    runs = []
    for row in rows:
        nxt = overlap_next(row)
        conn.execute(
            update(INTENT)
            .where(INTENT.c.id == row["id"], INTENT.c.next_run_at == row["next_run_at"])
            .values(next_run_at=nxt, updated_at=now)
        )
        runs.append(
            _run(
                intent_id=row["id"],
                attempt=row["attempts"],
                trigger="schedule",
                status=RunStatus.SKIPPED,
                reason="overlap",
                planned_at=row["next_run_at"],
                started_at=now,
                finished_at=now,
                owner=owner,
            )
        )
    inserted = _insert_runs(conn, runs)
    _journal(
        conn,
        now,
        [
            (
                "run skipped",
                f"intent {r['intent_id']}",
                f"run {r['id']}: overlap (previous run still running)",
            )
            for r in inserted
        ],
    )
    return inserted


# -- leases ---------------------------------------------------------------------------------------
def renew_leases(
    engine: Engine, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
) -> dict[int, str]:
    """Extend this owner's leases; returns ``{intent_id: status}`` of the rows still ours."""
    if not intent_ids:
        return {}
    with engine.begin() as conn:
        rows = conn.execute(
            update(INTENT)
            .where(INTENT.c.id.in_(list(intent_ids)), INTENT.c.lease_owner == owner)
            .values(lease_until=lease_until)
            .returning(INTENT.c.id, INTENT.c.status)
        )
        return {r.id: r.status for r in rows}


# -- completion ------------------------------------------------------------------------------------
_AFTER_COLUMNS = (
    "status",
    "next_run_at",
    "consecutive_failures",
    "last_error",
    "lease_owner",
    "lease_until",
    "pending_trigger",
    "pending_event_id",
    "updated_at",
)


def _run_done(by_id: Any) -> Any:
    return (
        update(RUN)
        .where(by_id)
        .values(
            status=bindparam("v_status"),
            reason=bindparam("v_reason"),
            finished_at=bindparam("v_finished_at", type_=_Stamp()),
            exit_code=bindparam("v_exit_code"),
            output_tail=bindparam("v_output_tail"),
            output_path=bindparam("v_output_path"),
        )
    )


def _after(by_id: Any) -> Any:
    return (
        update(INTENT)
        .where(
            by_id,
            INTENT.c.status == IntentStatus.FIRING,
            INTENT.c.lease_owner == bindparam("_owner"),
        )
        .values({k: _bind(f"v_{k}", INTENT.c[k]) for k in _AFTER_COLUMNS})
    )


_RUN_DONE_KEYS = (
    "_id",
    "v_status",
    "v_reason",
    "v_finished_at",
    "v_exit_code",
    "v_output_tail",
    "v_output_path",
)
_RUN_DONE = _run_done(RUN.c.id == bindparam("_id"))
_RUN_DONE_GROUP = _run_done(RUN.c.id.in_(bindparam("_ids", expanding=True)))

#: What the completion rules read of an intent (and what alerts get to see).
_AFTER_READ = (
    "id",
    "thread_id",
    "goal_id",
    "worker",
    "title",
    "kind",
    "status",
    "schedule",
    "timezone",
    "next_run_at",
    "max_fires",
    "fires",
    "expires_at",
    "attempts",
    "consecutive_failures",
    "lease_owner",
    "lease_until",
    "last_error",
    "pending_trigger",
    "pending_event_id",
    "last_alert_at",
)


_AFTER = _after(INTENT.c.id == bindparam("_id"))
_AFTER_GROUP = _after(INTENT.c.id.in_(bindparam("_ids", expanding=True)))


def complete_runs(
    engine: Engine,
    *,
    owner: str,
    now: datetime,
    items: Sequence[Completion],
    decide: Callable[[Row, Completion], AfterDecision],
) -> list[CompletionResult]:
    """Record outcomes and apply the rules, for many runs in one transaction.

    The intent changes only if its row is still ``firing`` with our lease (a
    compare-and-set); otherwise (cancelled meanwhile, lease lost) the run gets its
    outcome and the intent is left as it is: a cancel that happened meanwhile wins.
    """
    if not items:
        return []
    with engine.begin() as conn:
        return _complete(conn, owner, now, items, decide)


def _complete(
    conn: Connection,
    owner: str,
    now: datetime,
    items: Sequence[Completion],
    decide: Callable[[Row, Completion], AfterDecision],
) -> list[CompletionResult]:
    results: list[CompletionResult] = []
    ids = sorted({c.intent_id for c in items})
    fast = sqlite_hot.cursor(conn) if conn.dialect.name == "sqlite" else None
    if fast is not None:
        found = sqlite_hot.intents_by_id(fast, ids, _AFTER_READ)
    else:
        cols, stamps = _columns(conn, INTENT, _AFTER_READ)
        q = select(*cols).where(INTENT.c.id.in_(ids))
        if _is_pg(conn):
            q = q.with_for_update()
        found = _rows_of(conn.execute(q), stamps)
    rows = {r["id"]: r for r in found}
    intent_updates: list[tuple[int, Row]] = []
    run_updates: list[tuple[Completion, str]] = []
    overlap_runs: list[Row] = []
    release: list[int] = []
    journal: list[tuple[str, str, str]] = []
    for c in items:
        row = rows.get(c.intent_id)
        ours = row is not None and row["lease_owner"] == owner
        status = c.status
        decision = None
        if ours and row["status"] == IntentStatus.FIRING:
            decision = decide(row, c)
            values = dict(decision.values)
            values["updated_at"] = now
            full = {k: values[k] if k in values else row.get(k) for k in _AFTER_COLUMNS}
            intent_updates.append((row["id"], full))
            for when in decision.overlaps:
                overlap_runs.append(
                    _run(
                        intent_id=row["id"],
                        attempt=row["attempts"],
                        trigger="schedule",
                        status=RunStatus.SKIPPED,
                        reason="overlap",
                        planned_at=when,
                        started_at=now,
                        finished_at=now,
                        owner=owner,
                    )
                )
            row.update(full)
        elif ours:
            # Cancelled (or otherwise ended) while the run lived: keep its status.
            if row["status"] == IntentStatus.CANCELLED and status in (
                RunStatus.OK,
                RunStatus.SILENT,
            ):
                pass  # it finished before the stop landed: keep the real outcome
            elif row["status"] == IntentStatus.CANCELLED:
                status = RunStatus.CANCELLED
            release.append(row["id"])
            row["lease_owner"], row["lease_until"] = None, None
        run_updates.append((c, status))
        journal.append(
            (
                "run finished",
                f"intent {c.intent_id}",
                f"run {c.run_id}: {status}" + (f" - {c.reason}" if c.reason else ""),
            )
        )
        if decision is not None:
            for action, detail in decision.journal:
                journal.append((action, f"intent {c.intent_id}", detail))
        results.append(
            CompletionResult(
                completion=c,
                run_status=status,
                recorded=True,
                applied=decision is not None,
                intent=row,
                decision=decision,
            )
        )
    # Runs first: a run closed meanwhile (recovered by another scheduler) keeps its record.
    run_ids = [c.run_id for c in items]
    if fast is not None:
        open_ids = sqlite_hot.open_runs(fast, run_ids)
    else:
        still_open = select(RUN.c.id).where(
            RUN.c.id.in_(run_ids), RUN.c.status == RunStatus.RUNNING
        )
        if _is_pg(conn):
            still_open = still_open.with_for_update()
        open_ids = set(conn.execute(still_open).scalars().all())
    todo = [
        (c.run_id, status, c.reason, now, c.exit_code, c.output_tail, c.output_path)
        for c, status in run_updates
        if c.run_id in open_ids
    ]
    for r in results:
        r.recorded = r.completion.run_id in open_ids
    if fast is not None:
        sqlite_hot.close_runs(fast, todo)
        sqlite_hot.update_after(fast, _AFTER_COLUMNS, intent_updates, owner)
    else:
        _apply(
            conn,
            [dict(zip(_RUN_DONE_KEYS, u, strict=True)) for u in todo],
            per_row=_RUN_DONE,
            grouped=_RUN_DONE_GROUP,
            skip=(),
        )
        _apply(
            conn,
            [
                {"_id": i, "_owner": owner, **{f"v_{k}": v for k, v in full.items()}}
                for i, full in intent_updates
            ],
            per_row=_AFTER,
            grouped=_AFTER_GROUP,
            skip=(),
        )
    if release:
        conn.execute(
            update(INTENT)
            .where(
                INTENT.c.id.in_(release),
                INTENT.c.lease_owner == owner,
                INTENT.c.status != IntentStatus.FIRING,
            )
            .values(lease_owner=None, lease_until=None)
        )
    inserted = _insert_runs(conn, overlap_runs)
    for r in inserted:
        journal.append(
            (
                "run skipped",
                f"intent {r['intent_id']}",
                f"run {r['id']}: overlap (previous run still running)",
            )
        )
    _journal(conn, now, journal)
    return results


# -- recovery ------------------------------------------------------------------------------------
def recover_expired(
    engine: Engine,
    *,
    owner: str,
    now: datetime,
    decide: Callable[[Row, Completion], AfterDecision],
) -> RecoveryResult:
    """Recover rows left ``firing`` by a dead process (lease expired), in one transaction.

    Their open ``running`` run is closed as ``interrupted`` and ``decide`` applies the
    retry rule. Runs left ``running`` whose intent moved on (cancelled, or re-claimed by
    someone else) while their owner's lease lapsed are closed too (``cancelled`` if the
    intent was cancelled, else ``interrupted``).
    """
    result = RecoveryResult()
    reason = "interrupted: the scheduler running it stopped (lease expired)"
    with engine.begin() as conn:
        q = select(INTENT).where(
            INTENT.c.status == IntentStatus.FIRING,
            or_(INTENT.c.lease_until.is_(None), INTENT.c.lease_until < now),
        )
        if _is_pg(conn):
            q = q.with_for_update(skip_locked=True)
        stale = _rows(conn.execute(q))
        journal: list[tuple[str, str, str]] = []
        for row in stale:
            runs = _rows(
                conn.execute(
                    update(RUN)
                    .where(RUN.c.intent_id == row["id"], RUN.c.status == RunStatus.RUNNING)
                    .values(status=RunStatus.INTERRUPTED, reason=reason, finished_at=now)
                    .returning(*RUN.c)
                )
            )
            run = runs[-1] if runs else _run(id=None, intent_id=row["id"], event_id=None)
            c = Completion(
                run_id=run.get("id") or 0,
                intent_id=row["id"],
                status=RunStatus.INTERRUPTED,
                reason=reason,
                snapshot=(row["kind"], row["schedule"], row["timezone"]),
                event_id=run.get("event_id"),
            )
            decision = decide(row, c)
            values = {k: decision.values.get(k, row[k]) for k in _AFTER_COLUMNS}
            values["updated_at"] = now
            done = conn.execute(
                update(INTENT)
                .where(
                    INTENT.c.id == row["id"],
                    INTENT.c.status == IntentStatus.FIRING,
                    or_(INTENT.c.lease_until.is_(None), INTENT.c.lease_until < now),
                )
                .values(values)
                .returning(INTENT.c.id)
            ).first()
            if done is None:
                continue
            row.update(values)
            for r in runs:
                journal.append(("run interrupted", _subject(row), f"run {r['id']}: {reason}"))
            for action, detail in decision.journal:
                journal.append((action, _subject(row), detail))
            result.interrupted.append((row, run, decision))
        # Runs whose owner lost its lease while the intent moved on.
        lease_ok = and_(
            INTENT.c.lease_owner == RUN.c.owner,
            INTENT.c.lease_until.is_not(None),
            INTENT.c.lease_until >= now,
        )
        orphans = _rows(
            conn.execute(
                select(
                    RUN.c.id, RUN.c.intent_id, RUN.c.owner, INTENT.c.status.label("intent_status")
                )
                .select_from(RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id))
                .where(
                    RUN.c.status == RunStatus.RUNNING,
                    or_(RUN.c.owner.is_(None), RUN.c.owner != owner),
                    not_(lease_ok),
                )
            )
        )
        for o in orphans:
            status = (
                RunStatus.CANCELLED
                if o["intent_status"] == IntentStatus.CANCELLED
                else RunStatus.INTERRUPTED
            )
            why = (
                "cancelled; the scheduler running it stopped"
                if status == RunStatus.CANCELLED
                else reason
            )
            n = conn.execute(
                update(RUN)
                .where(RUN.c.id == o["id"], RUN.c.status == RunStatus.RUNNING)
                .values(status=status, reason=why, finished_at=now)
                .returning(RUN.c.id)
            ).first()
            if n is not None:
                o["status"] = status
                result.orphans.append(o)
                journal.append(
                    (f"run {status}", f"intent {o['intent_id']}", f"run {o['id']}: {why}")
                )
        # Leases left on rows that are no longer firing (cancelled while running, owner gone).
        conn.execute(
            update(INTENT)
            .where(
                INTENT.c.status != IntentStatus.FIRING,
                INTENT.c.lease_owner.is_not(None),
                INTENT.c.lease_until < now,
            )
            .values(lease_owner=None, lease_until=None)
        )
        _journal(conn, now, journal)
    return result


def end_expired(engine: Engine, *, now: datetime) -> list[Row]:
    """Active or paused intents past ``expires_at`` become ``done``; returns them."""
    with engine.begin() as conn:
        rows = _rows(
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
        _journal(conn, now, [("intent done", _subject(r), f"{r['title']}: expired") for r in rows])
    return rows


# -- catch-up ----------------------------------------------------------------------------------------
def catch_up(
    engine: Engine,
    *,
    now: datetime,
    overdue_before: datetime,
    kinds: Sequence[str],
    plan: Callable[[Row], CatchUpPlan | None],
    limit_text: str,
) -> list[tuple[Row, CatchUpPlan]]:
    """Apply the catch-up rule to active rows overdue since before ``overdue_before``.

    Rows a user made due (run-now, retry, event) are left alone. Each row is updated
    with a compare-and-set on its old ``next_run_at``, so a scheduler that claims it
    meanwhile wins.
    """
    done: list[tuple[Row, CatchUpPlan]] = []
    with engine.begin() as conn:
        rows = _rows(
            conn.execute(
                select(INTENT).where(
                    INTENT.c.status == IntentStatus.ACTIVE,
                    INTENT.c.next_run_at < overdue_before,
                    INTENT.c.pending_trigger.is_(None),
                    INTENT.c.kind.in_(list(kinds)),
                )
            )
        )
        missed_runs: list[Row] = []
        journal: list[tuple[str, str, str]] = []
        for row in rows:
            p = plan(row)
            if p is None:
                continue
            values: Row = {"updated_at": now}
            if p.fire_at is not None:
                values.update(next_run_at=p.fire_at, pending_trigger="catch-up")
            else:
                values.update(next_run_at=p.next_run_at, status=p.status)
            hit = conn.execute(
                update(INTENT)
                .where(
                    INTENT.c.id == row["id"],
                    INTENT.c.status == IntentStatus.ACTIVE,
                    INTENT.c.next_run_at == row["next_run_at"],
                )
                .values(values)
                .returning(INTENT.c.id)
            ).first()
            if hit is None:
                continue
            for i, when in enumerate(p.missed):
                extra = (
                    f"; {p.more_missed} more not listed"
                    if p.more_missed and i == len(p.missed) - 1
                    else ""
                )
                missed_runs.append(
                    _run(
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
            if p.missed:
                total = len(p.missed) + p.more_missed
                journal.append(
                    (
                        "run missed",
                        _subject(row),
                        f"{row['title']}: {total} occurrence(s) older than {limit_text}",
                    )
                )
            if p.fire_at is not None:
                journal.append(
                    (
                        "catch-up",
                        _subject(row),
                        f"{row['title']}: {p.coalesced} missed occurrence(s) fire once",
                    )
                )
            row.update(values)
            done.append((row, p))
        _insert_runs(conn, missed_runs)
        _journal(conn, now, journal)
    return done


# -- pruning ----------------------------------------------------------------------------------------
def prune_runs(engine: Engine, *, before: datetime, batch: int = 5000) -> list[Row]:
    """Delete finished runs that started before ``before``; returns (id, output_path)."""
    removed: list[Row] = []
    while True:
        with engine.begin() as conn:
            ids = (
                conn.execute(
                    select(RUN.c.id)
                    .where(RUN.c.started_at < before, RUN.c.status != RunStatus.RUNNING)
                    .limit(batch)
                )
                .scalars()
                .all()
            )
            if not ids:
                return removed
            removed.extend(
                _rows(conn.execute(select(RUN.c.id, RUN.c.output_path).where(RUN.c.id.in_(ids))))
            )
            conn.execute(delete(RUN).where(RUN.c.id.in_(ids)))
        if len(ids) < batch:
            return removed
