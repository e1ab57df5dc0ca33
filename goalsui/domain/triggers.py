"""When an intent is due: first planning and the next occurrence after a fire. Pure."""

from __future__ import annotations

from datetime import datetime

from goalsui.domain.cron import next_occurrence
from goalsui.domain.durations import parse_duration
from goalsui.domain.states import IntentKind
from goalsui.domain.timeutil import parse_instant


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
