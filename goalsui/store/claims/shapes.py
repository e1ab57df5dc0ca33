"""The values that travel between the scheduler and the claim backend.

Plain dataclasses and named tuples, no database: the scheduler's rules
(:mod:`goalsui.scheduler.rules`) build and read them; the backend executes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from goalsui.domain.states import IntentStatus

#: A row of the database as a plain dict (column name -> Python value).
Row = dict[str, Any]

#: Rows claimed per transaction (SQLite statements are chunked; psycopg takes this many).
CLAIM_BATCH = 500
#: A batch with more journal lines of one action than this gets one summary line.
JOURNAL_DETAIL_LIMIT = 20
#: The intent columns a claim or an outcome clears: no lease, no pending trigger.
RELEASED: Row = dict.fromkeys(("lease_owner", "lease_until", "pending_trigger", "pending_event_id"))


class ClaimAction(StrEnum):
    """What a claim does with a due row."""

    FIRE = "fire"  # start a run
    SKIP = "skip"  # record a skipped run (quiet hours, empty checklist), plan the next
    END = "end"  # no run: the intent ends (expired, max fires reached)


@dataclass
class ClaimDecision:
    """What to do with one claimed row (returned by the claim ``decide`` callback)."""

    action: ClaimAction
    trigger: str
    planned_at: datetime | None
    next_run_at: datetime | None  # the next due time once this occurrence is dealt with
    reason: str | None = None  # for skip / end
    end_status: str = IntentStatus.DONE  # the intent status after skip-with-no-next / end
    count_fire: bool = True  # fire: does it count toward max_fires?


@dataclass(frozen=True, slots=True)
class Claimed:
    """A row claimed: the intent as it is after the claim, its run as inserted (with its
    id), the event that made it due, and what the rules decided."""

    intent: Row
    run: Row
    event: Row | None
    decision: ClaimDecision


@dataclass
class ClaimResult:
    fired: list[Claimed] = field(default_factory=list)
    skipped: list[Claimed] = field(default_factory=list)  # quiet hours, empty checklist
    overlaps: list[Row] = field(default_factory=list)  # skipped-overlap runs recorded
    ended: list[tuple[Row, str]] = field(default_factory=list)  # (intent, reason): no run
    full: bool = False  # the batch was full: more rows may be due
    soonest: datetime | None = None  # min(next_run_at) of the active rows after the claim
    burst: int = 0  # active rows due within the burst window of ``soonest`` (capped)
    released: list[CompletionResult] = field(default_factory=list)  # the outcomes recorded


class Completion(NamedTuple):
    """How a turn ended, as the scheduler records it (immutable; a named tuple because
    one is made per fire and a frozen dataclass costs six times as much to build).

    ``infrastructure``: the failure was the machine's (no file descriptors left, ...),
    not the intent's: it is not counted toward auto-disable. ``skipped``: the runner
    decided not to start the turn (``reason`` says why); the run is recorded ``skipped``
    and is no failure.
    """

    run_id: int
    intent_id: int
    status: str
    reason: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    output_path: str | None = None
    snapshot: tuple[Any, ...] = ()  # (kind, schedule, timezone) when the run was claimed
    event_id: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    prompt: str | None = None
    argv: tuple[str, ...] | list[str] | None = None
    infrastructure: bool = False
    skipped: bool = False
    #: the turn could not start for a reason no retry fixes (no runner, an unknown
    #: preset, a program not found): held for the operator, not retried or counted
    config_error: bool = False


class Cas(NamedTuple):
    """One row's compare-and-set in a claim: the row as selected (``id``, its stored
    ``due`` value) and the values it gets (``attempts``/``fires`` are increments)."""

    id: int
    due: str
    status: str
    owner: str | None
    until: Any  # lease expiry (datetime or its stored text)
    attempts: int
    fires: int
    next_run_at: datetime | None
    fired_at: Any  # last_fired_at (datetime or its stored text)


@dataclass(slots=True)
class AfterDecision:
    """How an intent changes after an outcome (returned by the completion ``decide``)."""

    values: Row  # columns to set on the intent
    overlaps: list[datetime] = field(default_factory=list)  # occurrences that passed meanwhile
    failure: bool = False
    auto_disabled: bool = False
    journal: list[tuple[str, str]] = field(default_factory=list)  # (action, detail)
    needs_review: bool = False  # an interrupted run held for the operator (no retry)


class CompletionResult(NamedTuple):
    """How one outcome was recorded (a named tuple: one is made per fire)."""

    completion: Completion
    run_status: str  # what was recorded on the run (may differ: a cancel wins)
    recorded: bool  # the run row was still ``running`` and got this outcome
    applied: bool  # the intent was still ours and the rules were applied
    intent: Row | None  # the intent after the completion (None if it is gone)
    decision: AfterDecision | None


@dataclass
class RecoveryResult:
    #: (intent, run, after) of each intent recovered
    interrupted: list[tuple[Row, Row, AfterDecision]] = field(default_factory=list)
    orphans: list[Row] = field(default_factory=list)  # runs closed whose intent moved on
    #: runs left alone: their process group on this host would not die (retried later)
    alive: list[Row] = field(default_factory=list)
    killed: list[Row] = field(default_factory=list)  # runs whose live process group was killed


@dataclass(frozen=True, slots=True)
class CatchUpPlan:
    missed: list[datetime]  # occurrences recorded ``missed``
    fire_at: datetime | None  # fire once (trigger catch-up) planned at this occurrence
    next_run_at: datetime | None
    status: str = IntentStatus.ACTIVE
    more_missed: int = 0  # missed occurrences not recorded one by one
    coalesced: int = 0  # occurrences inside the limit folded into the one fire


class BurstProbe(NamedTuple):
    """Ask for the size of the burst due with the soonest row: the active rows due within
    ``window`` of it, counted up to ``limit``, when it is due by ``by`` (a burst further
    off is counted when it comes closer: an idle scheduler's poll stays one probe)."""

    window: timedelta
    limit: int
    by: datetime


class ClaimRules(Protocol):
    """The scheduling rules a claim backend applies, given to it once when it is built
    (the scheduler's are :class:`goalsui.scheduler.rules.Rules`)."""

    def decide_claim(self, row: Row, now: datetime) -> ClaimDecision:
        """What a due row does when claimed at ``now``: fire, skip or end."""

    def decide_after(self, row: Row, c: Completion, now: datetime) -> AfterDecision:
        """How the intent of a run that ended changes (its row is ours, ``firing``)."""

    def overlap_next(self, row: Row, now: datetime) -> datetime | None:
        """The next due time of a ``firing`` row whose occurrence passed during its run."""

    def plan_catch_up(self, row: Row, now: datetime, limit: timedelta) -> CatchUpPlan | None:
        """The catch-up plan of a row overdue at start (None: nothing to do)."""
