"""The scheduling rules (docs/architecture.md) as pure functions over intent rows (plain dicts).

- what a claimed due row does: fire, skip (quiet hours, empty checklist) or end
  (expired, max fires reached);
- how an outcome changes the intent: retry with backoff, auto-disable, lifecycle
  (``at`` once, ``max_fires``, ``expires_at``, cron/heartbeat next occurrence, event
  intents wait for the next event), a pause requested during the run, overlaps;
- the catch-up plan at start.

The store (:mod:`goalsui.store.claims`) executes what these functions decide.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from goalsui.domain.backoff import retry_delay
from goalsui.domain.checklist import checklist_is_empty
from goalsui.domain.cron import next_occurrence
from goalsui.domain.durations import format_duration, parse_duration
from goalsui.domain.states import FAILURE_RUNS, IntentKind, IntentStatus, RunStatus
from goalsui.domain.ticks import heartbeat_checklist, in_active_hours
from goalsui.domain.triggers import next_due
from goalsui.errors import GoalsuiError
from goalsui.kb.config import KBConfig
from goalsui.store.claims import (
    RELEASED,
    AfterDecision,
    CatchUpPlan,
    ClaimAction,
    ClaimDecision,
    Completion,
)
from goalsui.store.claims.shapes import Row

#: Reads a KB text file of a goal: ``read(goal_id, rel_path)``; raises if it is missing.
TextReader = Callable[[str, str], str]

#: Triggers a user (or an event) sets on an intent to make it due.
PENDING_TRIGGERS = frozenset({"run-now", "retry", "event", "catch-up"})
#: ``pending_trigger`` of a firing intent: the operator asked to pause it after its run.
PAUSE_REQUESTS = frozenset({"pause", "pause+stop"})
#: ``pending_trigger`` of a firing intent: the operator asked to stop its running run.
STOP_REQUESTS = frozenset({"stop", "pause+stop"})
#: Triggers to which active hours apply (an operator's run-now always runs).
QUIET_HOURS_TRIGGERS = frozenset({"schedule", "catch-up"})
#: Recorded missed runs per intent at start (older ones are only counted).
MAX_MISSED_RECORDS = 100
#: Occurrences walked per intent by the catch-up plan.
MAX_CATCH_UP_STEPS = 20_000


# -- time ------------------------------------------------------------------------------------
def _interval(schedule: str | None) -> timedelta:
    return parse_duration(schedule or "30m")


def advance(
    kind: str,
    schedule: str | None,
    tz: str,
    due: datetime | None,
    now: datetime,
    *,
    anchor: bool = True,
) -> datetime | None:
    """The first occurrence strictly after ``now`` (None: it never fires again on its own).

    Heartbeats keep their cadence from ``due`` when ``anchor`` (a scheduled tick) and
    restart from ``now`` otherwise (run-now, retry, event). Passed occurrences are never
    returned: the schedule advances without a storm.
    """
    try:
        if kind == IntentKind.CRON and schedule:
            return next_occurrence(schedule, tz, now)
        if kind == IntentKind.HEARTBEAT:
            every = _interval(schedule)
            if anchor and due is not None and due <= now:
                steps = int((now - due) // every) + 1
                return due + steps * every
            return now + every
        if kind == IntentKind.AT:
            if anchor and due is not None and due <= now:
                return None  # its one instant has come: no need to parse it again
            return next_due(kind, schedule, tz, now)
    except GoalsuiError:
        return None
    return None


# -- claim ---------------------------------------------------------------------------------------
def decide_claim(row: Row, now: datetime, read: TextReader | None = None) -> ClaimDecision:
    """What a claimed due row does: fire, skip (quiet hours, empty checklist) or end."""
    pending = row.get("pending_trigger")
    trigger = pending if pending in PENDING_TRIGGERS else "schedule"
    planned = row["next_run_at"]
    kind = row["kind"]
    expires = row.get("expires_at")
    if expires is not None and expires <= now:
        return ClaimDecision(ClaimAction.END, trigger, planned, None, reason="expired")
    max_fires = row.get("max_fires")
    if max_fires and row["fires"] >= max_fires and trigger != "retry":
        return ClaimDecision(
            ClaimAction.END, trigger, planned, None, reason=f"max fires ({max_fires}) reached"
        )
    anchor = trigger in ("schedule", "catch-up")
    nxt = advance(
        kind, row.get("schedule"), row.get("timezone") or "UTC", planned, now, anchor=anchor
    )
    # a skipped occurrence ends the intent when its next one is past the expiry
    expired_next = nxt is not None and expires is not None and nxt >= expires
    nxt_after_skip = None if expired_next else nxt
    if (
        trigger in QUIET_HOURS_TRIGGERS
        and row.get("active_hours")
        and not in_active_hours(row["active_hours"], now)  # when it would run
    ):
        return ClaimDecision(
            ClaimAction.SKIP, trigger, planned, nxt_after_skip, reason="quiet-hours"
        )
    if kind == IntentKind.HEARTBEAT and checklist_is_empty(heartbeat_checklist(row, read)):
        return ClaimDecision(
            ClaimAction.SKIP, trigger, planned, nxt_after_skip, reason="empty-checklist"
        )
    return ClaimDecision(ClaimAction.FIRE, trigger, planned, nxt, count_fire=trigger != "retry")


# -- after a run --------------------------------------------------------------------------------
def _overlapping(
    row: Row, nxt: datetime | None, now: datetime
) -> tuple[list[datetime], datetime | None]:
    """Occurrences at or before ``now`` (they passed during the run) and the next one after."""
    passed: list[datetime] = []
    while nxt is not None and nxt <= now and len(passed) < MAX_MISSED_RECORDS:
        passed.append(nxt)
        nxt = advance(row["kind"], row.get("schedule"), row.get("timezone") or "UTC", nxt, now)
    return passed, nxt


def decide_after(row: Row, c: Completion, now: datetime, config: KBConfig) -> AfterDecision:
    """How an intent changes after a run ended with ``c.status`` (the row is ours, firing)."""
    pause = row.get("pending_trigger") in PAUSE_REQUESTS
    values: Row = dict(RELEASED)
    d = AfterDecision(values=values)
    if c.status in FAILURE_RUNS:
        _after_failure(d, row, c, now, config, pause)
        return d
    if c.status in (RunStatus.OK, RunStatus.SILENT):
        values["consecutive_failures"] = 0
        values["last_error"] = None
    _after_fire(d, row, c, now, pause)
    return d


def _after_failure(
    d: AfterDecision, row: Row, c: Completion, now: datetime, config: KBConfig, pause: bool
) -> None:
    """A failed run: a retry with back-off, or auto-disable after too many in a row."""
    retry, values, title = config.retry, d.values, row.get("title") or ""
    d.failure = True
    # An infrastructure failure (the machine's, not the intent's) is retried but not
    # counted toward auto-disable.
    n = int(row.get("consecutive_failures") or 0) + (0 if c.infrastructure else 1)
    values["consecutive_failures"] = n
    values["last_error"] = (c.reason or c.status)[:2000]
    if n >= retry.max_consecutive_failures and not c.infrastructure:
        d.auto_disabled = True
        values.update(status=IntentStatus.FAILED, next_run_at=None)
        d.journal.append(
            (
                "intent auto-disabled",
                f"{title}: {n} consecutive failures; last error: {values['last_error']}",
            )
        )
        return
    delay = retry_delay(max(n, 1), retry.base_seconds, retry.cap_seconds)
    values.update(next_run_at=now + delay, pending_trigger="retry", pending_event_id=c.event_id)
    values["status"] = IntentStatus.PAUSED if pause else IntentStatus.ACTIVE
    d.journal.append(
        (
            "retry planned",
            f"{title}: failure {n} of {retry.max_consecutive_failures}, retry in {format_duration(delay)}",
        )
    )


def _after_fire(d: AfterDecision, row: Row, c: Completion, now: datetime, pause: bool) -> None:
    """A run that did not fail: the next occurrence, or done (at, max fires, expiry)."""
    title = row.get("title") or ""
    kind = row["kind"]
    snapshot = (row["kind"], row.get("schedule"), row.get("timezone"))
    nxt = row.get("next_run_at")
    if c.snapshot and tuple(c.snapshot) != snapshot:
        nxt = advance(
            kind, row.get("schedule"), row.get("timezone") or "UTC", None, now, anchor=False
        )
    status = IntentStatus.ACTIVE
    max_fires = row.get("max_fires")
    expires = row.get("expires_at")
    if kind == IntentKind.EVENT:
        nxt = None
    elif kind == IntentKind.AT:
        if nxt is not None and nxt <= now:
            nxt = advance(kind, row.get("schedule"), row.get("timezone") or "UTC", None, now)
        if nxt is None:
            status = IntentStatus.DONE
    else:
        d.overlaps, nxt = _overlapping(row, nxt, now)
        if nxt is None:
            status = IntentStatus.DONE
    if max_fires and row["fires"] >= max_fires:
        status, nxt, why = IntentStatus.DONE, None, f"max fires ({max_fires}) reached"
    elif expires is not None and (expires <= now or (nxt is not None and nxt >= expires)):
        status, nxt, why = IntentStatus.DONE, None, "expired"
    else:
        why = "fired once" if kind == IntentKind.AT else "no further occurrence"
    if status == IntentStatus.DONE:
        d.overlaps = []
        d.journal.append(("intent done", f"{title}: {why}"))
    elif pause:
        status = IntentStatus.PAUSED
        d.journal.append(("intent paused", f"{title}: paused after its run"))
    d.values.update(status=status, next_run_at=nxt)


# -- catch-up ------------------------------------------------------------------------------------
def plan_catch_up(row: Row, now: datetime, limit: timedelta) -> CatchUpPlan | None:
    """The catch-up rule for a row overdue at start.

    Occurrences older than ``limit`` are ``missed`` (recorded, not fired); the ones
    inside it fire once (coalesced); then the next future occurrence.
    """
    kind = row["kind"]
    first = row["next_run_at"]
    tz = row.get("timezone") or "UTC"
    horizon = now - limit
    if first is None or first > now:
        return None
    if kind == IntentKind.AT:
        if first < horizon:
            return CatchUpPlan(
                missed=[first], fire_at=None, next_run_at=None, status=IntentStatus.DONE
            )
        return CatchUpPlan(missed=[], fire_at=first, next_run_at=None, coalesced=1)
    if kind not in (IntentKind.CRON, IntentKind.HEARTBEAT):
        return None
    walk = _walk_heartbeat if kind == IntentKind.HEARTBEAT else _walk_cron
    missed, more, coalesced, last_inside = walk(row, first, horizon, now)
    if last_inside is not None:
        return CatchUpPlan(
            missed=missed,
            fire_at=last_inside,
            next_run_at=None,
            more_missed=more,
            coalesced=coalesced,
        )
    nxt = advance(kind, row.get("schedule"), tz, first, now)
    return CatchUpPlan(
        missed=missed,
        fire_at=None,
        next_run_at=nxt,
        status=IntentStatus.ACTIVE if nxt is not None else IntentStatus.DONE,
        more_missed=more,
    )


#: (missed occurrences recorded, more missed not recorded, coalesced, last one inside)
_Walk = tuple[list[datetime], int, int, datetime | None]


def _walk_heartbeat(row: Row, first: datetime, horizon: datetime, now: datetime) -> _Walk:
    """A heartbeat's occurrences from ``first`` to ``now``, counted, not stepped through."""
    every = _interval(row.get("schedule"))
    missed: list[datetime] = []
    more = 0
    t = first
    if first < horizon:
        n_old = int((horizon - first) // every) + 1  # occurrences strictly before horizon
        if (first + (n_old - 1) * every) >= horizon:
            n_old -= 1
        missed = [first + i * every for i in range(min(n_old, MAX_MISSED_RECORDS))]
        more = max(0, n_old - MAX_MISSED_RECORDS)
        t = first + n_old * every
    if t <= now:
        count = int((now - t) // every) + 1
        return missed, more, count, t + (count - 1) * every
    return missed, more, 0, None


def _walk_cron(row: Row, first: datetime, horizon: datetime, now: datetime) -> _Walk:
    """A cron row's occurrences from ``first`` to ``now``, stepped through (bounded)."""
    kind, schedule, tz = row["kind"], row.get("schedule"), row.get("timezone") or "UTC"
    missed: list[datetime] = []
    more = steps = 0
    t: datetime | None = first
    while t is not None and t < horizon and steps < MAX_CATCH_UP_STEPS:
        if len(missed) < MAX_MISSED_RECORDS:
            missed.append(t)
        else:
            more += 1
        t = advance(kind, schedule, tz, None, t, anchor=False)
        steps += 1
    if t is not None and t < horizon:
        # Too many to walk: jump to the limit (the rest are counted as "more").
        more += 1
        t = advance(kind, schedule, tz, None, horizon - timedelta(microseconds=1), anchor=False)
    coalesced = 0
    last_inside = None
    while t is not None and t <= now and steps < 2 * MAX_CATCH_UP_STEPS:
        coalesced += 1
        last_inside = t
        t = advance(kind, schedule, tz, None, t, anchor=False)
        steps += 1
    return missed, more, coalesced, last_inside


class Rules:
    """These rules as the one object a claim backend is built with
    (:class:`goalsui.store.claims.ClaimRules`): ``config`` gives the KB config in force
    (retries, auto-disable), ``read`` a heartbeat's checklist."""

    def __init__(
        self, config: Callable[[], KBConfig] = KBConfig, read: TextReader | None = None
    ) -> None:
        self.config, self.read = config, read

    def decide_claim(self, row: Row, now: datetime) -> ClaimDecision:
        # A row claimed a little ahead (lookahead) is decided as of its due time.
        due = row["next_run_at"]
        return decide_claim(row, max(now, due) if due else now, self.read)

    def decide_after(self, row: Row, c: Completion, now: datetime) -> AfterDecision:
        return decide_after(row, c, now, self.config())

    def overlap_next(self, row: Row, now: datetime) -> datetime | None:
        return advance(
            row["kind"], row.get("schedule"), row.get("timezone") or "UTC", row["next_run_at"], now
        )

    def plan_catch_up(self, row: Row, now: datetime, limit: timedelta) -> CatchUpPlan | None:
        return plan_catch_up(row, now, limit)
