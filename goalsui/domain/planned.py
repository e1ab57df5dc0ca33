"""The values of ``goalsui plan``: a predicted fire, one intent's summary line, the window
``--until`` names. Pure; :mod:`goalsui.domain.planner` makes the fires."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, time, timedelta, tzinfo
from typing import Any

from goalsui.domain.durations import parse_duration
from goalsui.domain.records import IntentRecord
from goalsui.domain.timeutil import ensure_utc, load_zone, localize, parse_instant
from goalsui.errors import ScheduleError, ValidationError

MAX_PLAN_WINDOW = timedelta(days=31)
MAX_FIRES_PER_INTENT = 500
_GOAL_SUFFIX = re.compile(r"-[0-9a-f]{8}$")


@dataclass(frozen=True)
class PlannedFire:
    """One predicted fire (or skipped tick, or a note about an intent)."""

    at: datetime | None  # aware UTC; None for a note that has no time
    intent_id: int
    label: str  # "nightshift/scout", "intent 7 (Friday reminder)"
    kind: str  # fire | skip | note
    rule: str  # the rule that decides it, for people
    timezone: str = "UTC"
    goal_id: str | None = None
    worker: str | None = None
    run_length: timedelta = timedelta(0)  # expected run length (overlap checks)
    length_basis: str = ""  # "typical 1.2s of 5 runs" | "timeout 1m"
    warning: str | None = None  # a predicted overlap
    overlaps_with: int | None = None  # the intent whose run it overlaps
    count: int = 1  # consecutive skipped ticks collapsed into one line
    last_at: datetime | None = None  # the last of those ticks
    trigger: str = "schedule"  # schedule | run-now | retry | event | catch-up

    def local(self, dt: datetime | None = None, zone: tzinfo | None = None) -> str:
        dt = dt or self.at
        if dt is None:
            return "-"
        return local_text(dt, zone or load_zone(self.timezone))

    def line(self, zone: tzinfo | None = None) -> str:
        """``2026-12-02 20:30 +01:00  nightshift/scout  cron 30 20 * * * (Europe/Berlin)``.

        Times in ``zone`` when given, else in the intent's own display zone.
        """
        when = "-".ljust(22) if self.at is None else self.local(zone=zone)
        text = f"{when}  {self.label}  {self.rule}"
        if self.kind == "skip" and self.count > 1 and self.last_at is not None:
            text += f" ({self.count} ticks until {self.local(self.last_at, zone)[11:16]})"
        return text

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["run_length_s"] = data.pop("run_length").total_seconds()
        for key in ("at", "last_at"):
            data[key] = data[key].isoformat(timespec="seconds") if data[key] else None
        data["local"] = self.local() if self.at else None
        return data


def local_text(dt: datetime, zone: tzinfo) -> str:
    """``2026-12-02 20:30 +01:00``: ``dt`` on the wall clock of ``zone``."""
    local = dt.astimezone(zone)
    offset = local.strftime("%z")
    return f"{local:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:]}"


def intent_label(intent: IntentRecord) -> str:
    """``nightshift/scout`` for a worker (goal id without its hex suffix), else ``intent N (title)``."""
    if intent.goal_id and intent.worker:
        return f"{_GOAL_SUFFIX.sub('', intent.goal_id)}/{intent.worker}"
    title = " ".join(intent.title.split())
    if len(title) > 40:
        title = title[:39] + "…"
    return f"intent {intent.id} ({title})"


def plan_window(now: datetime, until: datetime) -> tuple[datetime, datetime]:
    """``(now, until)`` in UTC; a window that ends before it starts or is too long is refused."""
    now, until = ensure_utc(now), ensure_utc(until)
    if until <= now:
        raise ValidationError("--until must be later than now")
    if until - now > MAX_PLAN_WINDOW:
        raise ValidationError(f"--until is too far ahead (at most {MAX_PLAN_WINDOW.days} days)")
    return now, until


def parse_until(text: str, now: datetime, tz: str | tzinfo | None = None) -> datetime:
    """``--until``: a duration (``8h``), a local time (``07:30``: the next one), or ISO 8601.

    A time or naive timestamp is read in ``tz`` (default: this machine's local zone).
    """
    value = (text or "").strip()
    if not value:
        raise ValidationError("--until is empty: use 8h, 07:30 or an ISO timestamp")
    zone = load_zone(tz if tz is not None else now.astimezone().tzinfo or UTC)
    if re.fullmatch(r"\d{1,2}:\d{2}", value):
        hours, minutes = (int(x) for x in value.split(":"))
        if hours > 23 or minutes > 59:
            raise ValidationError(f"invalid --until {value!r}: a time must be 00:00-23:59")
        local_day = now.astimezone(zone).date()
        for offset in range(0, 3):
            candidate = localize(
                datetime.combine(local_day + timedelta(days=offset), time(hours, minutes)), zone
            )
            if candidate > now:
                return candidate
    if re.fullmatch(r"\d+(?:\.\d+)?\s*[dhmsDHMS].*", value) and not re.match(r"\d{4}-", value):
        try:
            return now + parse_duration(value)
        except ScheduleError:
            pass
    try:
        return parse_instant(value, zone)
    except ScheduleError:
        raise ValidationError(
            f"invalid --until {value!r}: use a duration (8h), a time (07:30) or ISO 8601"
        ) from None


@dataclass
class IntentPlan:
    """One intent's line in the plan summary."""

    intent_id: int
    label: str
    rule: str = ""  # the schedule's rule (the first fire's when none is on schedule)
    on_schedule: bool = False
    fires: list[datetime] = field(default_factory=list)
    capped: bool = False  # more fires than MAX_FIRES_PER_INTENT: the count is a floor
    skipped: int = 0
    skip_reason: str = ""
    conflicts: list[PlannedFire] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def summarise(items: list[PlannedFire]) -> list[IntentPlan]:
    """One row per intent, in order of its next fire (intents without one last)."""
    rows: dict[int, IntentPlan] = {}
    for item in items:
        row = rows.setdefault(item.intent_id, IntentPlan(item.intent_id, item.label))
        if item.kind == "note":
            if item.rule.startswith(f"more than {MAX_FIRES_PER_INTENT} fires"):
                row.capped = True
            else:
                row.notes.append(item.rule)
        elif item.kind == "skip":
            row.skipped += item.count
            row.skip_reason = row.skip_reason or item.rule
        elif item.at is not None:
            row.fires.append(item.at)
            scheduled = item.trigger == "schedule"
            if not row.rule or (scheduled and not row.on_schedule):
                row.rule, row.on_schedule = item.rule, scheduled
            if item.warning:
                row.conflicts.append(item)
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(rows.values(), key=lambda r: (r.fires[0] if r.fires else far, r.label))
