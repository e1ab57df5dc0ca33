"""Cron occurrences in an IANA timezone, by goalsui's DST rules (docs/architecture.md, "Time").

croniter walks wall-clock times; this module maps them to instants itself: an every-hour
schedule fires once per real hour, a fixed-hour one fires a skipped time at the gap's end
and a repeated time once (croniter 7 alone fires it twice). Vixie ``day_or`` semantics."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from itertools import islice

from croniter import CroniterBadDateError, CroniterError, croniter

from goalsui.domain.timeutil import ensure_utc, gap_end, load_zone, quote, wall_instants
from goalsui.errors import ScheduleError

MAX_CRON_LENGTH = 200

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # a tab may separate fields
_HASHED = re.compile(r"(?:^|[,])(?:h|r)(?:$|[(/,])", re.IGNORECASE)
_PROBE_FROM = datetime(2000, 1, 1)
_FIVE = "five fields: minute hour day-of-month month day-of-week"


@dataclass(frozen=True)
class _Spec:
    normalized: str  # what the operator wrote, tidied (aliases in lower case)
    fields: str  # the five fields handed to croniter
    every_hour: bool  # the hour field matches all 24 hours


def _bad(expr: object, reason: str) -> ScheduleError:
    return ScheduleError(f"invalid cron expression {quote(expr)}: {reason}")


_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("day-of-week", "0-7 or sun-sat"),
)


def _croniter_reason(exc: BaseException, fields: str) -> str:
    """A short reason: the offending field when one field alone is bad, else croniter's."""
    parts = fields.split()  # always five: an alias or a checked expression
    for index, (name, allowed) in enumerate(_FIELDS):
        probe = ["*"] * 5
        probe[index] = parts[index]
        try:
            croniter.expand(" ".join(probe))
        except Exception:  # noqa: BLE001 - croniter's errors on a bad field vary
            return f"{name} field {quote(parts[index], 40)} is not valid (allowed {allowed})"
    text = " ".join(str(exc).split())
    text = re.sub(r"^\[[^\]]*\]\s*", "", text)  # croniter repeats the expression first
    text = re.sub(r"^is not acceptable[.,]?\s*", "", text).rstrip(".")
    if "can never occur" in text:
        return f"it can never fire ({text[0].lower()}{text[1:]})"
    if not text or "Traceback" in text or len(text) > 120:
        return "not a valid cron expression"
    return text


def _compile(expr: str) -> _Spec:
    if not isinstance(expr, str):
        raise _bad(expr, "expected text such as '30 2 * * *'")
    return _compile_text(expr)


@lru_cache(maxsize=512)
def _compile_text(expr: str) -> _Spec:
    if len(expr) > MAX_CRON_LENGTH:
        raise _bad(expr, f"longer than {MAX_CRON_LENGTH} characters")
    if _CONTROL.search(expr.strip()):
        raise _bad(expr, "contains control characters")
    if not expr.isascii():
        raise _bad(expr, "contains non-ASCII characters")
    parts = expr.split()
    if not parts:
        raise _bad(expr, f"empty; use {_FIVE}")
    if parts[0].startswith("@"):
        alias = parts[0].lower()
        if len(parts) != 1 or alias not in ALIASES:
            raise _bad(
                expr,
                "unknown alias; use @hourly, @daily, @weekly, @monthly, @yearly, "
                "@annually or @midnight",
            )
        normalized, fields = alias, ALIASES[alias]
    else:
        if len(parts) == 6:
            raise _bad(expr, f"6 fields; a seconds (or year) field is not supported, use {_FIVE}")
        if len(parts) != 5:
            raise _bad(expr, f"{len(parts)} field{'s' if len(parts) != 1 else ''}; use {_FIVE}")
        if any(_HASHED.search(p) for p in parts):
            raise _bad(expr, "hashed (H) and random (R) fields are not supported")
        normalized = fields = " ".join(parts)
    day_fields = fields.split()
    dom_and_dow = day_fields[2] not in ("*", "?") and day_fields[4] not in ("*", "?")
    try:
        # Strict mode rejects a day no listed month has (``0 0 31 2 *``); with a day-of-week
        # too, Vixie OR makes it harmless (February Mondays), so the probe decides.
        expanded, _nth = croniter.expand(fields, strict=not dom_and_dow)
        croniter(fields, _PROBE_FROM, day_or=True).get_next(datetime)
    except CroniterBadDateError:
        raise _bad(expr, "it can never fire") from None
    except CroniterError as exc:
        raise _bad(expr, _croniter_reason(exc, fields)) from None
    except Exception:  # noqa: BLE001 - croniter can leak TypeError/IndexError on odd input
        raise _bad(expr, "not a valid cron expression") from None
    return _Spec(normalized=normalized, fields=fields, every_hour=expanded[1] == ["*"])


def validate_cron(expr: str) -> str:
    """The tidied expression (single spaces, aliases lower case), or ScheduleError.

    Five fields or an ``@hourly``-style alias; refuses seconds, hashed fields, expressions
    that never fire, control characters and more than 200 characters."""
    return _compile(expr).normalized


def is_every_hour(expr: str) -> bool:
    """True when the hour field matches every hour (so DST repeats and skips real hours)."""
    return _compile(expr).every_hour


def _iter_after(spec: _Spec, zone: tzinfo, after: datetime) -> Iterator[datetime]:
    """Instants (aware UTC) strictly after ``after``, ascending, without duplicates."""
    local = after.astimezone(zone)
    start = local.replace(tzinfo=None, fold=0)
    both = wall_instants(start, zone)
    if len(both) == 2 and local.fold == 0:
        # ``after`` is in a repeated hour's first pass: earlier wall times occur again
        # after it, so the walk starts before the repeated hour.
        start -= both[1] - both[0]
    walk = croniter(spec.fields, start, day_or=True)
    pending: list[datetime] = []
    last: datetime | None = None
    while True:
        try:
            wall = walk.get_next(datetime)
        except CroniterBadDateError:
            return
        instants = wall_instants(wall, zone)
        if not instants:
            if spec.every_hour:
                continue  # a real hour without this reading; the next hour fires
            instants = (gap_end(wall, zone),)
        elif len(instants) == 2 and not spec.every_hour:
            instants = instants[:1]  # repeated local time: the first occurrence only
        # The first instant of each wall time never decreases along the walk, and every
        # later one is at least that, so everything pending up to it is final.
        floor = instants[0]
        for instant in instants:
            heapq.heappush(pending, instant)
        while pending and pending[0] <= floor:
            instant = heapq.heappop(pending)
            if instant > after and instant != last:
                last = instant
                yield instant


def next_occurrence(expr: str, tz: str | tzinfo, after: datetime) -> datetime:
    """The first occurrence of ``expr`` in ``tz`` strictly after ``after`` (aware), in UTC."""
    spec = _compile(expr)
    zone = load_zone(tz)
    for instant in _iter_after(spec, zone, ensure_utc(after)):
        return instant
    raise _bad(expr, "it never fires again")


def occurrences(expr: str, tz: str | tzinfo, start: datetime, count: int) -> list[datetime]:
    """The first ``count`` occurrences strictly after ``start``: aware UTC, ascending."""
    return list(islice(_iter_after(_compile(expr), load_zone(tz), ensure_utc(start)), count))
