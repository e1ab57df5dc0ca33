"""Durations as operators type them (``30s``, ``10m``, ``2h``, ``1d``, ``1h30m``) and read them."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from goalsui.errors import ScheduleError

MAX_DURATION = timedelta(days=366)

_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_UNIT_ORDER = "dhms"
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([dhms])", re.IGNORECASE)
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?\s*[dhms]\s*)+", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_HINT = "use a number followed by s, m, h or d (e.g. 30s, 10m, 2h, 1d)"


def _show(text: object) -> str:
    s = str(text)
    s = s if len(s) <= 40 else s[:39] + "…"
    return "'" + re.sub(r"[\x00-\x1f\x7f]", "?", s) + "'"


def _checked(seconds: float, shown: object) -> timedelta:
    if math.isnan(seconds) or seconds <= 0:
        raise ScheduleError(f"invalid duration {_show(shown)}: must be greater than zero")
    if math.isinf(seconds) or seconds > MAX_DURATION.total_seconds():
        raise ScheduleError(f"invalid duration {_show(shown)}: at most 366 days")
    td = timedelta(seconds=seconds)
    if td <= timedelta(0):  # below a microsecond it rounds to nothing
        raise ScheduleError(f"invalid duration {_show(shown)}: must be greater than zero")
    return td


def parse_duration(text: str | int | float) -> timedelta:
    """A positive duration of at most 366 days: ``30s``, ``1h30m``, ``1.5h``, or seconds."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ScheduleError(f"invalid duration {_show(text)}: {_HINT}")
    if not isinstance(text, str):
        try:
            seconds = float(text)
        except OverflowError:
            seconds = math.inf
        return _checked(seconds, text)
    s = text.strip()
    if not s:
        raise ScheduleError(f"invalid duration '': empty; {_HINT}")
    if len(s) > 64:
        raise ScheduleError(f"invalid duration {_show(text)}: {_HINT}")
    if s.startswith("-"):
        raise ScheduleError(f"invalid duration {_show(text)}: must be greater than zero")
    if _NUMBER.fullmatch(s):
        return _checked(float(s), text)
    if not _WHOLE.fullmatch(s):
        raise ScheduleError(f"invalid duration {_show(text)}: {_HINT}")
    total = 0.0
    last = -1
    for number, unit in _PART.findall(s):
        rank = _UNIT_ORDER.index(unit.lower())
        if rank <= last:
            raise ScheduleError(
                f"invalid duration {_show(text)}: give each unit once, largest first (e.g. 1h30m)"
            )
        last = rank
        total += float(number) * _UNIT_SECONDS[unit.lower()]
    return _checked(total, text)


def format_duration(td: timedelta) -> str:
    """A short human form with at most two units: ``45s``, ``12m``, ``2h05m``, ``3d4h``."""
    total = td.total_seconds()
    sign = "-" if total < 0 else ""
    seconds = int(abs(total))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        body = f"{days}d{hours}h" if hours else f"{days}d"
    elif hours:
        body = f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    elif minutes:
        body = f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    else:
        body = f"{secs}s"
    return sign + body if body != "0s" else "0s"
