"""The rules of ``goalsui plan`` over the intents' and runs' records (docs/architecture.md):
cron occurrences with the DST rules, paused and auto-disabled intents (nothing fires; one
note each), quiet hours (the tick is skipped), empty heartbeat checklists (skipped, zero
runner calls), event cooldowns, ``max_fires``, ``expires_at``, pending retries, run-now and
catch-up. A fire that starts before the same intent's previous run is expected to end gets
a conflict warning (:mod:`goalsui.domain.plan_rules`). Pure: the callers read the records
(:func:`goalsui.scheduler.plan.plan` through the service, :mod:`goalsui.service.quick_plan`
with the standard library)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from typing import Any, Protocol

from croniter import croniter

from goalsui.domain.backoff import RetryPolicy, retry_delay
from goalsui.domain.checklist import checklist_is_empty
from goalsui.domain.cron import ALIASES, is_every_hour, occurrences
from goalsui.domain.durations import format_duration
from goalsui.domain.plan_rules import expected_length, self_overlaps
from goalsui.domain.planned import (
    MAX_FIRES_PER_INTENT,
    PlannedFire,
    intent_label,
    local_text,
    plan_window,
)
from goalsui.domain.records import IntentRecord, RunRecord
from goalsui.domain.states import EXECUTED_RUNS, IntentKind, IntentStatus
from goalsui.domain.ticks import heartbeat_checklist, in_active_hours
from goalsui.domain.timeutil import load_zone, wall_instants
from goalsui.domain.triggers import next_due
from goalsui.errors import GoalsuiError

#: the run history the expected run lengths come from: runs started since ``now - HISTORY``,
#: at most ``HISTORY_LIMIT`` of them, newest first
HISTORY = timedelta(days=14)
HISTORY_LIMIT = 5000
TYPICAL_RUNS = 20
#: reads a KB text file of a goal: ``read(goal_id, rel_path)``
TextReader = Callable[[str, str], str]
#: a fire asked for by hand or by a failure, and its rule
_PENDING = {
    "run-now": "run-now pending",
    "retry": "retry requested",
    "catch-up": "catch-up requested",
}


class PlanSettings(Protocol):
    """What the plan reads of the KB config (:class:`goalsui.kb.config.KBConfig`)."""

    @property
    def timeout(self) -> timedelta: ...
    @property
    def catch_up_limit(self) -> timedelta: ...
    @property
    def retry(self) -> RetryPolicy: ...


def skips_empty_checklist(intent: IntentRecord, read: TextReader | None = None) -> bool:
    """A heartbeat whose checklist says nothing: its ticks are skipped, zero runner calls.

    The scheduler's own rule (:func:`goalsui.domain.ticks.heartbeat_checklist`); a KB
    worker's checklist is its ``prompt.md``, so without ``read`` it is not judged.
    """
    if intent.kind != IntentKind.HEARTBEAT:
        return False
    if intent.goal_id and intent.worker and read is None:
        return False
    row = {
        "goal_id": intent.goal_id,
        "worker": intent.worker,
        "checklist": intent.checklist,
        "instruction": intent.instruction,
    }
    return checklist_is_empty(heartbeat_checklist(row, read))


def _hours_text(active_hours: dict[str, Any]) -> str:
    return f"active {active_hours['start']}-{active_hours['end']} {active_hours.get('timezone') or 'UTC'}"


def _durations(runs: Sequence[RunRecord]) -> dict[int, list[float]]:
    """The durations (seconds) of each intent's recent finished runs, newest first."""
    by_intent: dict[int, list[float]] = defaultdict(list)
    for run in runs:  # newest first
        if run.finished_at is None or run.status not in EXECUTED_RUNS:
            continue
        values = by_intent[run.intent_id]
        if len(values) < TYPICAL_RUNS:
            values.append(max(0.0, (run.finished_at - run.started_at).total_seconds()))
    return dict(by_intent)


def _dst_note(expr: str, zone: tzinfo, at: datetime) -> str:
    """Why a cron fire is where it is across DST, or ''."""
    local = at.astimezone(zone)
    wall = local.replace(tzinfo=None, fold=0)
    fields = ALIASES.get(expr.lower(), expr) if expr.startswith("@") else expr
    try:
        matches = croniter.match(fields, wall, day_or=True)
    except Exception:  # noqa: BLE001 - a note is optional
        return ""
    if not matches:
        return "; DST gap: the scheduled local time does not exist that day, fires at the end of the gap"
    if len(wall_instants(wall, zone)) == 2:
        if is_every_hour(expr):
            return "; DST repeated hour: fires once per real hour"
        return "; DST repeated hour: first occurrence only"
    return ""


def _schedule_rule(intent: IntentRecord) -> str:
    if intent.kind == IntentKind.CRON:
        return f"cron {intent.schedule} ({intent.timezone})"
    if intent.kind == IntentKind.HEARTBEAT:
        return f"heartbeat every {intent.schedule or '30m'}"
    if intent.kind == IntentKind.AT:
        return f"at {intent.schedule}"
    return intent.kind


def _on_schedule(intent: IntentRecord, after: datetime) -> tuple[datetime, str, str, bool] | None:
    """The intent's next scheduled fire after ``after`` (see :meth:`_Planner.first_fire`)."""
    nxt = next_due(intent.kind, intent.schedule, intent.timezone, after)
    return (nxt, _schedule_rule(intent), "schedule", True) if nxt else None


def _display_zone(intent: IntentRecord) -> str:
    hours_zone = (intent.active_hours or {}).get("timezone")
    if intent.kind != IntentKind.CRON and hours_zone:
        return str(hours_zone)
    return intent.timezone or "UTC"


@dataclass
class _Planner:
    now: datetime
    until: datetime
    settings: PlanSettings
    lengths: dict[int, list[float]]
    display: tzinfo | None = None  # one zone for every time shown; None: each intent's own
    read: TextReader | None = None
    out: list[PlannedFire] = field(default_factory=list)

    def length(self, intent: IntentRecord) -> tuple[timedelta, str]:
        timeout = timedelta(seconds=intent.timeout_s) if intent.timeout_s else self.settings.timeout
        return expected_length(self.lengths.get(intent.id, []), timeout)

    def zone(self, intent: IntentRecord) -> tzinfo:
        return self.display or load_zone(_display_zone(intent))

    def base(self, intent: IntentRecord) -> dict[str, Any]:
        length, basis = self.length(intent)
        return {
            "intent_id": intent.id,
            "label": intent_label(intent),
            "timezone": _display_zone(intent),
            "goal_id": intent.goal_id,
            "worker": intent.worker,
            "run_length": length,
            "length_basis": basis,
        }

    def add(
        self, intent: IntentRecord, kind: str, rule: str, at: datetime | None, **extra: Any
    ) -> None:
        """One line of the plan about ``intent`` (``extra``: more fields of the line)."""
        self.out.append(PlannedFire(at=at, kind=kind, rule=rule, **extra, **self.base(intent)))

    def note(self, intent: IntentRecord, rule: str, at: datetime | None = None) -> None:
        self.add(intent, "note", rule, at)

    def intent(self, intent: IntentRecord) -> None:
        status = intent.status
        if status in (IntentStatus.CANCELLED, IntentStatus.DONE):
            return
        if status == IntentStatus.PAUSED:
            why = " (its goal is paused)" if (intent.last_error or "").startswith("goal ") else ""
            self.note(intent, f"paused{why}: nothing fires until it is resumed")
            return
        if status == IntentStatus.FAILED:
            error = " ".join((intent.last_error or "no error recorded").split())[:160]
            self.note(
                intent,
                f"auto-disabled after {intent.consecutive_failures} consecutive failures: nothing fires "
                f"(last error: {error}; 'goalsui intent resume {intent.id}')",
            )
            return
        if intent.expires_at is not None and intent.expires_at <= self.now:
            self.note(
                intent,
                f"expired at {local_text(intent.expires_at, self.zone(intent))}: ends as done, nothing fires",
            )
            return
        if intent.max_fires is not None and intent.fires >= intent.max_fires:
            self.note(intent, f"max_fires {intent.max_fires} reached: ends as done, nothing fires")
            return
        if status == IntentStatus.FIRING:
            self.note(intent, "running now; the schedule continues after this run")
        if intent.kind == IntentKind.EVENT:
            self.event_intent(intent)
            return
        self.timed_intent(intent)

    def event_intent(self, intent: IntentRecord) -> None:
        if (
            intent.pending_trigger == "event"
            and intent.next_run_at is not None
            and intent.status == IntentStatus.ACTIVE
        ):
            at = max(intent.next_run_at, self.now)
            rule = f"event pending (event {intent.pending_event_id})"
            self.add(intent, "fire", rule, at, trigger="event")
        text = f"waits for events from '{intent.event_source}'"
        if intent.event_filter:
            text += " matching its filter"
        if intent.cooldown_s:
            text += f", cooldown {format_duration(timedelta(seconds=intent.cooldown_s))}"
            if intent.last_fired_at is not None:
                free = intent.last_fired_at + timedelta(seconds=intent.cooldown_s)
                if free > self.now:
                    text += f" (events before {local_text(free, self.zone(intent))} fire nothing)"
        if intent.expires_at is not None:
            text += f"; expires {local_text(intent.expires_at, self.zone(intent))}"
        if intent.max_fires is not None:
            text += f"; {intent.max_fires - intent.fires} of {intent.max_fires} fires left"
        self.note(intent, text)

    def first_fire(self, intent: IntentRecord) -> tuple[datetime, str, str, bool] | None:
        """(when, rule, trigger, on_schedule) of the next fire, or None."""
        first = intent.next_run_at
        if intent.status == IntentStatus.FIRING:
            return _on_schedule(intent, max(first or self.now, self.now))
        if first is None:
            self.note(intent, "no next run planned")
            return None
        pending = intent.pending_trigger
        if pending in _PENDING and first <= self.now + timedelta(seconds=1):
            return max(first, self.now), _PENDING[pending], pending, False
        failures = intent.consecutive_failures
        if failures > 0:
            retry = self.settings.retry
            delay = retry_delay(failures, retry.base_seconds, retry.cap_seconds)
            rule = (
                f"retry after {failures} consecutive failure"
                f"{'s' if failures != 1 else ''} (backoff {format_duration(delay)})"
            )
            return max(first, self.now), rule, "retry", False
        if first < self.now:
            limit = self.settings.catch_up_limit
            if self.now - first > limit:
                rule = (
                    f"missed: due {local_text(first, self.zone(intent))}, overdue by more than "
                    f"{format_duration(limit)} (recorded missed, then the next occurrence)"
                )
                self.add(intent, "skip", rule, self.now, trigger="catch-up")
                return _on_schedule(intent, self.now)
            return (
                self.now,
                f"overdue since {local_text(first, self.zone(intent))}: fires now (catch-up, "
                f"{_schedule_rule(intent)})",
                "catch-up",
                False,
            )
        return first, _schedule_rule(intent), "schedule", True

    def timed_intent(self, intent: IntentRecord) -> None:
        first = self.first_fire(intent)
        if first is None:
            return
        at: datetime | None
        at, rule, trigger, on_schedule = first
        fires = intent.fires
        emitted = 0
        empty = skips_empty_checklist(intent, self.read)
        zone = load_zone(intent.timezone or "UTC")
        expr = intent.schedule or ""
        while at is not None and at <= self.until:
            if intent.expires_at is not None and at >= intent.expires_at:
                self.note(
                    intent,
                    f"expires at {local_text(intent.expires_at, self.zone(intent))}: ends as done",
                    at=intent.expires_at,
                )
                return
            if emitted >= MAX_FIRES_PER_INTENT:
                self.note(
                    intent,
                    f"more than {MAX_FIRES_PER_INTENT} fires in the window; the rest are not listed",
                )
                return
            text = rule
            if on_schedule and intent.kind == IntentKind.CRON:
                text += _dst_note(expr, zone, at)
            if (
                trigger in ("schedule", "catch-up")
                and intent.active_hours
                and not in_active_hours(intent.active_hours, at)
            ):
                self.add_skip(
                    intent, at, f"skipped: quiet-hours ({_hours_text(intent.active_hours)})"
                )
            elif empty:
                self.add_skip(intent, at, "skipped: empty-checklist (zero runner calls)")
            else:
                if trigger != "retry":  # a retry repeats a fire; it does not count as one
                    fires += 1
                done = intent.max_fires is not None and fires >= intent.max_fires
                if done:
                    text += f"; max_fires {intent.max_fires} reached: then done"
                self.add(intent, "fire", text, at, trigger=trigger)
                emitted += 1
                if done:
                    return
            if intent.kind == IntentKind.AT:
                return
            at = self.next_after(intent, at)
            rule, trigger, on_schedule = _schedule_rule(intent), "schedule", True

    def next_after(self, intent: IntentRecord, at: datetime) -> datetime | None:
        if intent.kind == IntentKind.CRON and intent.schedule:
            found = occurrences(intent.schedule, intent.timezone, at, count=1)
            return found[0] if found else None
        return next_due(intent.kind, intent.schedule, intent.timezone, at)

    def add_skip(self, intent: IntentRecord, at: datetime, rule: str) -> None:
        last = self.out[-1] if self.out else None
        if last is not None and (last.kind, last.intent_id, last.rule) == ("skip", intent.id, rule):
            self.out[-1] = replace(last, count=last.count + 1, last_at=at)
            return
        self.add(intent, "skip", rule, at, last_at=at)


def _overlaps(
    fires: list[PlannedFire],
    running: dict[int, tuple[RunRecord, datetime]],
    zone: tzinfo | None = None,
) -> list[PlannedFire]:
    """Mark the fires that start while the same intent's previous run may still be running.

    ``fires`` are in time order (``plan`` sorts them); ``running`` maps an intent to its
    live run and when that run is expected to end. Different intents are never compared.
    """
    by_intent: dict[int, list[int]] = defaultdict(list)
    for index, fire in enumerate(fires):
        if fire.kind == "fire" and fire.at is not None:
            by_intent[fire.intent_id].append(index)
    result = list(fires)
    for intent_id, indexes in by_intent.items():
        first = fires[indexes[0]]
        live = running.get(intent_id)
        starts = [at for i in indexes if (at := fires[i].at) is not None]
        hits = self_overlaps(starts, first.run_length, live[1] if live else None)
        for hit in hits:
            fire = fires[indexes[hit]]
            if live is not None and hit == 0:
                since = fire.local(live[0].started_at, zone)[11:]
                before = f"its run since {since} may still be running until {fire.local(live[1], zone)[11:]}"
            else:
                before = f"its previous run may still be running ({fire.length_basis})"
            result[indexes[hit]] = replace(
                fire,
                warning=f"conflict: {before}; this fire would be skipped (overlap)",
                overlaps_with=intent_id,
            )
    return result


def plan_fires(
    intents: Sequence[IntentRecord],
    history: Sequence[RunRecord],
    running: Sequence[RunRecord],
    settings: PlanSettings,
    now: datetime,
    until: datetime,
    *,
    read: TextReader | None = None,
    zone: tzinfo | None = None,
) -> list[PlannedFire]:
    """What fires from ``now`` until ``until`` (inclusive), and why.

    ``intents`` by id (the ended ones left out), ``history`` the runs of the last
    :data:`HISTORY` newest first, ``running`` the runs still running; ``read`` reads a
    worker's ``prompt.md`` (its heartbeat checklist). Notes (paused, auto-disabled, event
    intents, expiry) come first, then fires and skipped ticks in time order. A fire
    predicted to start while the same intent's previous run still runs carries a
    ``warning``. Times in the rule texts are shown in ``zone`` when given, else in each
    intent's own zone.
    """
    now, until = plan_window(now, until)
    planner = _Planner(
        now=now,
        until=until,
        settings=settings,
        lengths=_durations(history),
        display=zone,
        read=read,
    )
    for intent in intents:
        try:
            planner.intent(intent)
        except GoalsuiError as exc:
            planner.note(intent, f"cannot plan: {exc}")
    notes = [f for f in planner.out if f.at is None or f.kind == "note"]
    timed = sorted((f for f in planner.out if f.kind != "note"), key=lambda f: (f.at, f.label))
    ids = {i.id: i for i in intents}
    live = {
        r.intent_id: (r, r.started_at + planner.length(ids[r.intent_id])[0])
        for r in running
        if r.intent_id in ids
    }
    return notes + _overlaps(timed, live, zone)
