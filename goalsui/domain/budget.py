"""Budget rules: limits, their periods in a timezone, and whether a turn may start.

A day is local midnight to midnight; the night is :data:`NIGHT_START` to :data:`NIGHT_END`
(a night budget applies only then), in the budget's timezone, else the intent's. Only
reported usage counts: a run of unknown cost adds nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

NIGHT_START = time(18, 0)
NIGHT_END = time(8, 0)
#: limit name -> (period, unit)
LIMITS: dict[str, tuple[str, str]] = {
    "usd_per_day": ("day", "usd"),
    "usd_per_night": ("night", "usd"),
    "tokens_per_day": ("day", "tokens"),
}


@dataclass(frozen=True)
class Budget:
    """Limits of one scope; None means no limit of that kind."""

    usd_per_day: float | None = None
    usd_per_night: float | None = None
    tokens_per_day: int | None = None
    timezone: str | None = None

    def limits(self) -> list[BudgetLimit]:
        return [BudgetLimit(n, float(v)) for n in LIMITS if (v := getattr(self, n)) is not None]

    def as_json(self) -> dict[str, float | int | str | None]:
        return asdict(self)


@dataclass(frozen=True)
class BudgetLimit:
    name: str  # a key of LIMITS
    value: float

    @property
    def period(self) -> str:
        return LIMITS[self.name][0]

    @property
    def unit(self) -> str:
        return LIMITS[self.name][1]


@dataclass(frozen=True)
class Spend:
    """What the runs of one scope reported within one period."""

    usd: float = 0.0
    tokens: int = 0
    runs: int = 0  # runs with a reported usage
    unknown: int = 0  # finished runs that reported nothing


@dataclass(frozen=True)
class Exhausted:
    """A spent limit: which, where, in which period, and how much."""

    scope: str  # "worker g/w", "goal g" or "kb"
    limit: BudgetLimit
    spent: float
    start: datetime  # UTC
    end: datetime  # UTC: the budget resets then
    where: str  # the file that sets it, for the "how to raise it" hint

    def message(self) -> str:
        shown = format_amount(self.spent, self.limit.unit)
        cap = format_amount(self.limit.value, self.limit.unit)
        return (
            f"budget {self.limit.name} of {self.scope} is spent ({shown} of {cap} this "
            f"{self.limit.period}); it resets at {self.end.isoformat(timespec='minutes')}. "
            f"Raise 'budget: {self.limit.name}' in {self.where} to run sooner."
        )

    def key(self) -> str:
        """One per budget and period: an alert is raised once for it."""
        return f"{self.scope}|{self.limit.name}|{self.start.isoformat(timespec='seconds')}"


def period_window(period: str, now: datetime, tz: str) -> tuple[datetime, datetime] | None:
    """The ``day`` or ``night`` holding ``now`` as (start, end) in UTC; None outside a night."""
    zone = ZoneInfo(tz)
    local = now.astimezone(zone)
    if period == "day":
        start = datetime.combine(local.date(), time(0), zone)
        end = datetime.combine(local.date() + timedelta(days=1), time(0), zone)
    elif period == "night":
        if NIGHT_END <= local.time() < NIGHT_START:
            return None
        first = local.date() if local.time() >= NIGHT_START else local.date() - timedelta(days=1)
        start = datetime.combine(first, NIGHT_START, zone)
        end = datetime.combine(first + timedelta(days=1), NIGHT_END, zone)
    else:
        raise ValueError(f"unknown budget period {period!r}")
    return start.astimezone(UTC), end.astimezone(UTC)


def exhausted(limit: BudgetLimit, spend: Spend) -> float | None:
    """The amount spent when ``limit`` is reached by ``spend``, else None."""
    spent = spend.usd if limit.unit == "usd" else float(spend.tokens)
    return spent if spent >= limit.value else None


def format_usd(value: float | None) -> str:
    """``$0.0123``, ``$12.50``; ``unknown`` when the agent did not say (never ``$0``)."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def format_tokens(value: int | None) -> str:
    """``950``, ``12.3k``, ``4.1M``; ``unknown`` when the agent did not say."""
    if value is None:
        return "unknown"
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


def format_amount(value: float, unit: str) -> str:
    return format_usd(value) if unit == "usd" else f"{format_tokens(int(value))} tokens"


@dataclass(frozen=True)
class RunPoint:
    """One run of an intent, for a sparkline: when, how long, how it ended, what it cost."""

    run_id: int
    status: str
    started_at: datetime
    seconds: float | None
    cost_usd: float | None
    tokens: int | None
