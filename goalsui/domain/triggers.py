"""When an intent is due: first planning and the next occurrence after a fire. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta

from goalsui.domain.cron import next_occurrence, validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.states import IntentKind
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.errors import ScheduleError


def validate_schedule(kind: str, schedule: str | None, tz: str) -> str | None:
    """Check a schedule for ``kind``; returns its normalized text."""
    load_zone(tz)
    if kind == IntentKind.CRON:
        if not schedule:
            raise ScheduleError("a cron intent needs a cron expression")
        return validate_cron(schedule)
    if kind == IntentKind.HEARTBEAT:
        every = parse_duration(schedule or "30m")
        if every < timedelta(seconds=10):
            raise ScheduleError("a heartbeat interval must be at least 10s")
        return schedule or "30m"
    if kind == IntentKind.AT:
        if not schedule:
            raise ScheduleError("an 'at' intent needs a timestamp")
        parse_instant(schedule, tz)
        return schedule
    if kind == IntentKind.EVENT:
        return None
    raise ScheduleError(f"unknown intent kind {kind!r}")


def next_due(kind: str, schedule: str | None, tz: str, after: datetime) -> datetime | None:
    """The next time an intent of ``kind`` is due strictly after ``after`` (None: never)."""
    if kind == IntentKind.CRON and schedule:
        return next_occurrence(schedule, tz, after)
    if kind == IntentKind.HEARTBEAT:
        return after + parse_duration(schedule or "30m")
    if kind == IntentKind.AT and schedule:
        at = parse_instant(schedule, tz)
        return at if at > after else None
    return None


def first_due(kind: str, schedule: str | None, tz: str, now: datetime) -> datetime | None:
    """The first due time of a new (or resumed) intent planned from ``now``."""
    if kind == IntentKind.AT and schedule:
        # An 'at' in the past is still due once (it fires at the next tick).
        return parse_instant(schedule, tz)
    return next_due(kind, schedule, tz, now)
