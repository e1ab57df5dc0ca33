"""The claim path's pure part: rows and decisions in, the values to write out.

No connection and no SQL here: the backends (:mod:`goalsui.store.claims.backend`)
read the rows, call these functions, and send what they return as statements. Every
text that goes to a text column passes :func:`~goalsui.domain.text.strip_nul` here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from goalsui.domain.interrupts import REVIEW, config_error, interrupt_policy, needs_review_error
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.domain.text import strip_nul
from goalsui.store.claims.shapes import (
    JOURNAL_DETAIL_LIMIT,
    RELEASED,
    AfterDecision,
    Cas,
    ClaimAction,
    ClaimDecision,
    Completion,
    CompletionResult,
    Row,
)
from goalsui.store.models import IntentRun

#: (action, subject, detail) of one journal line.
JournalEntry = tuple[str, str, str]
#: ``(run_id, *values of RUN_DONE_COLUMNS)``: one outcome as written to its run row.
RunOutcome = tuple[Any, ...]


#: The run columns' model defaults (``reason`` None, ``dismissed`` False, ...).
_RUN_DEFAULTS: Row = {
    name: f.default
    for name, f in IntentRun.model_fields.items()
    if name != "id" and not f.is_required() and f.default_factory is None
}


def new_run(**values: Any) -> Row:
    """A run row to insert: the given values over the defaults (reason NUL-free)."""
    row = dict(_RUN_DEFAULTS)
    row.update(values)
    if row["reason"] is not None:
        row["reason"] = strip_nul(row["reason"])
    return row


def subject(row: Row) -> str:
    return f"intent {row['id']}"


def journal_rows(now: datetime, entries: Iterable[JournalEntry]) -> list[Row]:
    """Journal rows (actor ``scheduler``); a big batch of one action becomes one line."""
    by_action: dict[str, list[JournalEntry]] = {}
    for entry in entries:
        by_action.setdefault(entry[0], []).append(entry)
    out: list[Row] = []
    for action, group in by_action.items():
        if len(group) > JOURNAL_DETAIL_LIMIT:
            sample = "; ".join(f"{s}: {d}" for _, s, d in group[:3])
            detail = f"{len(group)} x {action} in one batch, e.g. {sample}; ..."
            group = [(action, f"{len(group)} intents", detail)]
        out.extend(
            {
                "at": now,
                "actor": "scheduler",
                "action": a,
                "subject": strip_nul(s),
                "detail": strip_nul(d),
            }
            for a, s, d in group
        )
    return out


# -- claim -------------------------------------------------------------------------------------
@dataclass
class ClaimPlan:
    """The compare-and-set rows of a claim, then (once they all hit) the runs to insert."""

    cas: list[Cas]
    decisions: list[tuple[Row, ClaimDecision]]


def plan_claims(
    rows: Sequence[Row],
    due_texts: Sequence[Any],
    decide: Callable[[Row], ClaimDecision],
    *,
    owner: str,
    now: datetime,
    lease_until: datetime,
    stamp: Callable[[datetime | None], Any],
) -> ClaimPlan:
    """Decide each due row and build its compare-and-set; the rows are updated in place
    to what they will be after the claim (``_pending_event_id`` keeps the event that made
    the row due)."""
    decisions = [(row, decide(row)) for row in rows]
    now_s, until_s = stamp(now), stamp(lease_until)
    # What every claimed row gets, and what a fired one gets besides: one dict update
    # each, at C speed.
    other = {**RELEASED, "updated_at": now}
    fired = {
        **other,
        "status": IntentStatus.FIRING,
        "lease_owner": owner,
        "lease_until": lease_until,
        "last_fired_at": now,
    }
    cas: list[Cas] = []
    for (row, d), due_text in zip(decisions, due_texts, strict=True):
        row["_pending_event_id"] = row["pending_event_id"]
        nxt = d.next_run_at
        if d.action == ClaimAction.FIRE:
            fires = 1 if d.count_fire else 0
            cas.append(
                Cas(row["id"], due_text, IntentStatus.FIRING, owner, until_s, 1, fires, nxt, now_s)
            )
            row.update(fired)
            row["attempts"] += 1
            row["fires"] += fires
        else:
            status: str
            if d.action == ClaimAction.SKIP and nxt is not None:
                status = IntentStatus.ACTIVE
            else:
                status, nxt = d.end_status, None
            cas.append(
                Cas(row["id"], due_text, status, None, None, 0, 0, nxt, stamp(row["last_fired_at"]))
            )
            row.update(other)
            row["status"] = status
        row["next_run_at"] = nxt
    return ClaimPlan(cas, decisions)


def claimed_runs(
    plan: ClaimPlan, *, owner: str, now: datetime
) -> tuple[list[Row], list[tuple[Row, ClaimDecision]], list[tuple[Row, str]], list[JournalEntry]]:
    """The run rows a claim inserts (``running`` or ``skipped``), the (row, decision) of
    each in the same order, the rows it ended (no run), and their journal lines."""
    run_rows: list[Row] = []
    kept: list[tuple[Row, ClaimDecision]] = []
    ended: list[tuple[Row, str]] = []
    journal: list[JournalEntry] = []
    for row, d in plan.decisions:
        event_id = row.pop("_pending_event_id")
        if d.action == ClaimAction.END:
            ended.append((row, d.reason or "ended"))
            journal.append((f"intent {d.end_status}", subject(row), f"{row['title']}: {d.reason}"))
            continue
        running = d.action == ClaimAction.FIRE
        run_rows.append(
            new_run(
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
    return run_rows, kept, ended, journal


def overlap_run(row: Row, when: datetime | None, *, owner: str, now: datetime) -> Row:
    """The ``skipped: overlap`` run of an occurrence that passed while a run was running."""
    return new_run(
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


def overlap_lines(runs: Iterable[Row]) -> list[JournalEntry]:
    """The journal lines of inserted ``skipped: overlap`` runs."""
    return [
        (
            "run skipped",
            f"intent {r['intent_id']}",
            f"run {r['id']}: overlap (previous run still running)",
        )
        for r in runs
    ]


# -- completion ----------------------------------------------------------------------------------
_TEXT_FIELDS = ("reason", "output_tail", "output_path", "model", "prompt")


def clean_completion(c: Completion) -> Completion:
    """``c`` as it can be stored: NUL stripped from its texts, a runner's skip recorded as
    status ``skipped`` (and so never a failure)."""
    if not (
        c.skipped or c.argv or c.reason or c.output_tail or c.output_path or c.prompt or c.model
    ):
        return c  # the usual no-op outcome: nothing to clean
    changes: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        value = getattr(c, name)
        if value is not None and "\x00" in value:
            changes[name] = strip_nul(value)
    if c.argv is not None and any("\x00" in str(a) for a in c.argv):
        changes["argv"] = [strip_nul(str(a)) for a in c.argv]
    if c.skipped and c.status != RunStatus.SKIPPED:
        changes["status"] = RunStatus.SKIPPED
    return c._replace(**changes) if changes else c


def review_decision(row: Row, c: Completion) -> AfterDecision:
    """An interrupted run held for the operator: the intent is paused, not retried.

    ``last_error`` says "needs review: run N was interrupted ...; retry or dismiss it".
    Undone by the service: ``retry_intent`` fires it again at once; ``dismiss_run`` then
    ``resume_intent`` drops the attempt and plans the next occurrence from now.
    """
    error = needs_review_error(c.run_id or None, c.reason)
    values: Row = {
        "status": IntentStatus.PAUSED,
        "next_run_at": None,
        "last_error": error[:2000],
        **RELEASED,
    }
    return AfterDecision(
        values=values,
        needs_review=True,
        journal=[("run needs review", f"{row.get('title') or ''}: {error}")],
    )


def config_decision(row: Row, c: Completion) -> AfterDecision:
    """A run that could not start for a configuration reason: fails once and is held for
    the operator (paused, its run awaiting review), neither retried nor counted toward
    auto-disable. Retry or dismiss it after fixing the configuration."""
    error = config_error(c.run_id or None, c.reason)
    decision = review_decision(row, c)
    decision.values["last_error"] = error[:2000]
    decision.failure = True
    decision.journal = [("run held: configuration", f"{row.get('title') or ''}: {error}")]
    return decision


def after_outcome(
    row: Row, c: Completion, decide: Callable[[Row, Completion], AfterDecision]
) -> AfterDecision:
    """The rules' decision, except for an interrupted run of a ``review`` intent and a
    run that could not start for a configuration reason."""
    if c.config_error and c.status == RunStatus.FAILED:
        return config_decision(row, c)
    if c.status == RunStatus.INTERRUPTED and (
        interrupt_policy(row.get("on_interrupt"), row.get("runner")) == REVIEW
    ):
        return review_decision(row, c)
    return decide(row, c)


@dataclass
class CompletionPlan:
    """What recording a batch of outcomes writes (see :func:`plan_completions`)."""

    intent_updates: list[tuple[int, Row]] = field(default_factory=list)
    runs: list[tuple[Completion, str, bool]] = field(
        default_factory=list
    )  # (c, status, review) of the open runs
    overlap_runs: list[Row] = field(default_factory=list)
    release: list[int] = field(default_factory=list)  # intents whose lease is just dropped
    journal: list[JournalEntry] = field(default_factory=list)
    results: list[CompletionResult] = field(default_factory=list)


def plan_completions(
    rows: dict[int, Row],
    items: Sequence[Completion],
    decide: Callable[[Row, Completion], AfterDecision],
    *,
    owner: str,
    now: datetime,
    open_ids: Collection[int],
) -> CompletionPlan:
    """Apply the rules to each outcome whose intent is still ours and ``firing``
    (``open_ids``: the runs still ``running``, which get their outcome recorded).

    An intent cancelled (or otherwise ended) while its run lived keeps its status and
    only loses our lease; its run is recorded ``cancelled`` unless it had already
    succeeded. The rows in ``rows`` are updated in place.
    """
    plan = CompletionPlan()
    # More outcomes than JOURNAL_DETAIL_LIMIT make one journal line that quotes the first
    # three (journal_rows): the others' lines need no text.
    detailed = len(items) <= JOURNAL_DETAIL_LIMIT
    for k, c in enumerate(map(clean_completion, items)):
        row = rows.get(c.intent_id)
        ours = row is not None and row["lease_owner"] == owner
        status = c.status
        decision = None
        if row is not None and ours and row["status"] == IntentStatus.FIRING:
            decision = after_outcome(row, c, decide)
            _plan_after(plan, row, decision, owner=owner, now=now)
        elif row is not None and ours:
            if row["status"] == IntentStatus.CANCELLED and status not in (
                RunStatus.OK,
                RunStatus.SILENT,
            ):
                status = RunStatus.CANCELLED
            plan.release.append(row["id"])
            row["lease_owner"], row["lease_until"] = None, None
        recorded = c.run_id in open_ids
        if recorded:
            plan.runs.append((c, status, decision is not None and decision.needs_review))
        if detailed or k < 3:
            detail = f"run {c.run_id}: {status}" + (f" - {c.reason}" if c.reason else "")
            plan.journal.append(("run finished", f"intent {c.intent_id}", detail))
        else:
            plan.journal.append(("run finished", "", ""))
        if decision is not None and decision.journal:
            plan.journal.extend((a, f"intent {c.intent_id}", d) for a, d in decision.journal)
        plan.results.append(
            CompletionResult(c, status, recorded, decision is not None, row, decision)
        )
    return plan


def _plan_after(
    plan: CompletionPlan, row: Row, decision: AfterDecision, *, owner: str, now: datetime
) -> None:
    """The row takes the decision's values (every AFTER_COLUMNS column is read, so the
    updated row holds what the intent's update writes)."""
    values = decision.values
    values["updated_at"] = now
    if values.get("last_error") is not None:
        values["last_error"] = strip_nul(values["last_error"])
    if decision.overlaps:
        plan.overlap_runs.extend(
            overlap_run(row, w, owner=owner, now=now) for w in decision.overlaps
        )
    row.update(values)
    plan.intent_updates.append((row["id"], row))


def run_outcomes(plan: CompletionPlan, now: datetime) -> list[RunOutcome]:
    """The outcome of each run, in the order of
    :data:`~goalsui.store.claims.statements.RUN_DONE_COLUMNS`."""
    return [
        (
            c.run_id,
            status,
            c.reason,
            now,
            c.exit_code,
            c.output_tail,
            c.output_path,
            c.tokens_in,
            c.tokens_out,
            c.cost_usd,
            c.model,
            c.prompt,
            None if c.argv is None else list(c.argv),
            review,
        )
        for c, status, review in plan.runs
    ]


def bare_completion(c: Completion, error: BaseException) -> Completion:
    """``c`` reduced to what any database takes: its status and a reason saying its
    outcome could not be stored whole (for a batch where one outcome keeps failing)."""
    why = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
    reason = f"{c.reason or c.status}; the full outcome could not be recorded ({why})"
    return Completion(
        run_id=c.run_id,
        intent_id=c.intent_id,
        status=c.status,
        reason=strip_nul(reason)[:2000],
        snapshot=c.snapshot,
        event_id=c.event_id,
        infrastructure=c.infrastructure,
        skipped=c.skipped,
    )
