"""Instants, zones and wall clocks (docs/architecture.md, "Time"): every instant is
aware UTC; a wall time in a gap means the gap's end, a repeated one its first occurrence."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from goalsui.errors import ScheduleError

_MAX_ZONE_NAME = 255
_MAX_TIMESTAMP = 64
_DATE_CHARS = frozenset("0123456789-W")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def quote(text: object, limit: int = 60) -> str:
    """``text`` in single quotes, shortened and with control characters escaped, for messages."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)
    return f"'{s}'"


def utcnow() -> datetime:
    """The current instant, aware, in UTC."""
    return datetime.now(UTC)


def ensure_utc(dt: datetime) -> datetime:
    """``dt`` converted to UTC; a naive datetime is a programming error (ValueError)."""
    if not isinstance(dt, datetime):
        raise TypeError(f"expected a datetime, got {type(dt).__name__}")
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"naive datetime {dt.isoformat()} has no timezone")
    return dt.astimezone(UTC)


def load_zone(name: str | tzinfo) -> tzinfo:
    """The IANA zone called ``name`` (a zone passed in is returned as it is); ScheduleError
    ``unknown timezone '...'`` otherwise."""
    if isinstance(name, tzinfo):
        return name
    if not isinstance(name, str):
        raise ScheduleError(f"unknown timezone {quote(name)}")
    key = name.strip()
    if (
        not key
        or len(key) > _MAX_ZONE_NAME
        or _CONTROL.search(key)
        or key.startswith(("/", "\\"))
        or ".." in key
    ):
        raise ScheduleError(f"unknown timezone {quote(name)}")
    try:
        return ZoneInfo(key)
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError, OSError (a directory), ...
        raise ScheduleError(f"unknown timezone {quote(name)}") from None


def wall_instants(wall: datetime, zone: tzinfo) -> tuple[datetime, ...]:
    """The UTC instants at which ``zone`` reads ``wall``: none in a gap, two in a repeated hour."""
    wall = wall.replace(tzinfo=None, fold=0)
    both = {wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1)}
    return tuple(sorted(t for t in both if t.astimezone(zone).replace(tzinfo=None) == wall))


def gap_end(wall: datetime, zone: tzinfo) -> datetime:
    """The first UTC instant at which ``zone`` reads ``wall`` or later (a gap's end)."""
    wall = wall.replace(tzinfo=None, fold=0)
    lo, hi = sorted(wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))

    def reads_at_least(t: datetime) -> bool:
        return t.astimezone(zone).replace(tzinfo=None, fold=0) >= wall

    if reads_at_least(lo):
        return lo
    # Invariant: lo reads before ``wall``, hi reads at or after it. Transitions fall on
    # whole seconds, so a search to one second is exact.
    lo = lo.replace(microsecond=0)
    hi = hi.replace(microsecond=0) + timedelta(seconds=1) if hi.microsecond else hi
    while hi - lo > timedelta(seconds=1):
        mid = lo + timedelta(seconds=(hi - lo).total_seconds() // 2)
        if reads_at_least(mid):
            hi = mid
        else:
            lo = mid
    return hi


def localize(wall: datetime, zone: str | tzinfo) -> datetime:
    """A naive wall time in ``zone`` as aware UTC: a gap's end, or the first occurrence."""
    z = load_zone(zone)
    instants = wall_instants(wall, z)
    return instants[0] if instants else gap_end(wall, z)


def parse_instant(text: str, tz: str | tzinfo | None = None) -> datetime:
    """An ISO 8601 timestamp as aware UTC (``Z`` and a space allowed); one without an
    offset is local to ``tz``, and refused without it (it would depend on the machine)."""
    if not isinstance(text, str):
        raise ScheduleError(f"invalid timestamp {quote(text)}: expected an ISO 8601 string")
    s = text.strip()
    if not s:
        raise ScheduleError("invalid timestamp '': empty; use ISO 8601, e.g. 2026-12-01T18:00:00Z")
    if len(s) > _MAX_TIMESTAMP or _CONTROL.search(s):
        raise ScheduleError(f"invalid timestamp {quote(text)}: not an ISO 8601 timestamp")
    sep = next((i for i, ch in enumerate(s) if ch not in _DATE_CHARS), None)
    if sep is not None:
        if s[sep] not in "Tt ":
            raise ScheduleError(
                f"invalid timestamp {quote(text)}: use ISO 8601, e.g. 2026-12-01T18:00:00+01:00"
            )
        s = s[:sep] + "T" + s[sep + 1 :].strip()
        if s.endswith("z"):
            s = s[:-1] + "Z"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("Invalid isoformat string") or len(reason) > 80:
            reason = "use ISO 8601, e.g. 2026-12-01T18:00:00+01:00"
        raise ScheduleError(f"invalid timestamp {quote(text)}: {reason}") from None
    try:
        if dt.tzinfo is not None:
            return dt.astimezone(UTC)
        if tz is None:
            raise ScheduleError(
                f"timestamp {quote(text)} has no UTC offset; "
                "add one (e.g. +01:00 or Z) or pass --tz"
            )
        return localize(dt, tz)
    except OverflowError:
        raise ScheduleError(f"invalid timestamp {quote(text)}: out of range") from None


class MovingClock:
    """A clock that reads what it was last set to (a replay sets ``clock.now``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
