"""Whether a timed tick does anything: quiet hours and a heartbeat's checklist. Pure; the
scheduler's claim (:mod:`goalsui.scheduler.rules`) and ``goalsui plan`` share them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from goalsui.domain.timeutil import load_zone
from goalsui.errors import GoalsuiError


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def in_active_hours(hours: dict[str, Any] | None, instant: datetime) -> bool:
    """Whether ``instant`` is inside ``{start: "08:00", end: "22:00", timezone}``.

    ``start > end`` spans midnight (22:00-06:00); ``start == end`` means always.
    Missing or malformed hours mean always active.
    """
    if not hours:
        return True
    try:
        zone = load_zone(hours.get("timezone") or "UTC")
        start, end = _minutes(hours["start"]), _minutes(hours["end"])
    except (GoalsuiError, KeyError, ValueError, AttributeError):
        return True
    local = instant.astimezone(zone)
    t = local.hour * 60 + local.minute
    if start == end:
        return True
    if start < end:
        return start <= t < end
    return t >= start or t < end


def heartbeat_checklist(
    row: Mapping[str, Any], read: Callable[[str, str], str] | None
) -> str | None:
    """The text a heartbeat acts on: the worker's prompt.md, else the checklist/instruction.

    ``read(goal_id, rel_path)`` reads a KB file of a goal; without it a worker's is unknown.
    """
    if row.get("goal_id") and row.get("worker"):
        if read is None:
            return None
        try:
            return read(row["goal_id"], f"workers/{row['worker']}/prompt.md")
        except (GoalsuiError, OSError, UnicodeDecodeError):
            return None
    if row.get("checklist") is not None:
        return str(row["checklist"])
    instruction = row.get("instruction")
    return None if instruction is None else str(instruction)
