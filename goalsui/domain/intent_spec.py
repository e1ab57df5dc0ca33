"""What an operator or agent asks for when creating an intent, checked once. Pure.

What needs the records (goal exists, thread not private, key new) is checked by the
service. See docs/architecture.md, "The life of an intent"."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from goalsui.domain.cron import validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.names import check_name
from goalsui.domain.states import IntentKind
from goalsui.domain.text import one_line
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.domain.triggers import first_due
from goalsui.errors import ScheduleError, ValidationError

MAX_TITLE = 200
MAX_INSTRUCTION = 20_000
MAX_KEY = 200


def _kind(value: object) -> IntentKind:
    """``value`` as an :class:`IntentKind`, or a one-line error."""
    try:
        return IntentKind(str(value))
    except ValueError:
        raise ValidationError(f"unknown intent kind {value!r}") from None


def _title(value: object) -> str:
    """The title with its whitespace collapsed; non-empty and within the limit."""
    too_long = f"title is too long ({MAX_TITLE} characters at most)"
    return one_line(value, MAX_TITLE, empty="an intent needs a title", too_long=too_long)


def _text(value: object, what: str) -> str:
    """A free text field (instruction, checklist) within :data:`MAX_INSTRUCTION`."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text")
    if len(value) > MAX_INSTRUCTION:
        raise ValidationError(f"{what} is too long ({MAX_INSTRUCTION} characters at most)")
    return value


def _key(value: str | None) -> str | None:
    """The idempotency key, stripped; 1-200 characters without NUL."""
    if value is None:
        return None
    key = str(value).strip()
    if not key or len(key) > MAX_KEY or "\x00" in key:
        raise ValidationError(f"operation key must be 1-{MAX_KEY} characters")
    return key


def _seconds(value: str | int | None) -> int | None:
    """A duration ("90s", "5m", a number of seconds) in whole seconds."""
    return None if value is None or value == "" else int(parse_duration(value).total_seconds())


def _expiry(value: str | datetime | None, tz: str | None) -> datetime | None:
    """The expiry instant; text without a UTC offset needs ``tz`` (a datetime is checked
    with the other limits)."""
    return value if value is None or isinstance(value, datetime) else parse_instant(value, tz)


@dataclass(frozen=True)
class IntentSpec:
    """A validated request for a new intent; build one from operator text with :meth:`parse`.

    Without ``timezone`` cron runs in UTC and an instant without an offset is refused."""

    title: str
    kind: IntentKind
    instruction: str = ""
    schedule: str | None = None
    timezone: str | None = None
    thread_id: int | None = None
    goal_id: str | None = None
    worker: str | None = None
    operation_key: str | None = None
    max_fires: int | None = None
    expires_at: datetime | None = None
    cooldown_s: int = 0
    event_source: str | None = None
    event_filter: dict[str, Any] | None = field(default=None, hash=False)
    checklist: str | None = None
    active_hours: dict[str, Any] | None = field(default=None, hash=False)
    runner: dict[str, Any] | None = field(default=None, hash=False)
    timeout_s: int | None = None

    def __post_init__(self) -> None:
        """Check and normalise every field once (frozen: normalised through ``__setattr__``)."""
        fix = object.__setattr__
        fix(self, "title", _title(self.title))
        fix(self, "instruction", _text(self.instruction or "", "instruction"))
        if self.checklist is not None:
            _text(self.checklist, "checklist")
        fix(self, "kind", _kind(self.kind))
        fix(self, "schedule", self._checked_schedule())
        fix(self, "operation_key", _key(self.operation_key))
        self._check_limits()
        self._check_event()
        self._check_destination()

    @property
    def zone(self) -> str:
        """The IANA zone the intent runs in (UTC when none was given)."""
        return self.timezone or "UTC"

    def _checked_schedule(self) -> str | None:
        """The schedule, normalised for the kind; an 'at' instant needs an offset or a zone."""
        if self.timezone is not None and not isinstance(self.timezone, str):
            raise ValidationError("a timezone must be an IANA name such as Europe/Paris")
        load_zone(self.zone)
        schedule = self.schedule
        if self.kind == IntentKind.CRON:
            if not schedule:
                raise ScheduleError("a cron intent needs a cron expression")
            return validate_cron(schedule)
        if self.kind == IntentKind.HEARTBEAT:
            if parse_duration(schedule or "30m") < timedelta(seconds=10):
                raise ScheduleError("a heartbeat interval must be at least 10s")
            return schedule or "30m"
        if self.kind == IntentKind.AT:
            if not isinstance(schedule, str) and not schedule:
                raise ScheduleError("an 'at' intent needs a timestamp")
            parse_instant(schedule, self.timezone)  # "" and a naive instant refused
            return schedule
        return None  # an event intent

    def _check_limits(self) -> None:
        """max_fires, expiry, cooldown and timeout are in range."""
        fires = self.max_fires
        if fires is not None and (type(fires) is not int or fires < 1):
            raise ValidationError("--max-fires must be a whole number of at least 1")
        if self.expires_at is not None and (
            not isinstance(self.expires_at, datetime) or self.expires_at.tzinfo is None
        ):
            raise ValidationError("expiry has no UTC offset")
        if not isinstance(self.cooldown_s, int) or self.cooldown_s < 0:
            raise ValidationError("a cooldown must be zero or more seconds")
        if self.timeout_s is not None and (
            not isinstance(self.timeout_s, int) or self.timeout_s < 1
        ):
            raise ValidationError("a timeout must be at least one second")

    def _check_event(self) -> None:
        """An event intent names its source; a filter is a JSON object."""
        if self.kind == IntentKind.EVENT:
            if not self.event_source:
                raise ValidationError("an event intent needs a source (--event SOURCE)")
            check_name(self.event_source, "event source")
        if self.event_filter is not None and not isinstance(self.event_filter, dict):
            raise ValidationError("an event filter must be a JSON object")

    def _check_destination(self) -> None:
        """Destination ids have the right shape; a worker belongs to a goal."""
        if self.thread_id is not None and (
            isinstance(self.thread_id, bool) or not isinstance(self.thread_id, int)
        ):
            raise ValidationError(f"invalid thread id {self.thread_id!r}")
        if self.goal_id is not None:
            check_name(self.goal_id, "goal id")
        if self.worker is not None:
            if self.goal_id is None:
                raise ValidationError("a worker intent needs its goal")
            check_name(self.worker, "worker name")

    @classmethod
    def parse(
        cls,
        *,
        title: str,
        kind: str,
        expires_at: str | datetime | None = None,
        cooldown: str | int | None = None,
        timeout: str | int | None = None,
        **fields: Any,
    ) -> IntentSpec:
        """A spec from operator text (expiry ISO, cooldown and timeout durations)."""
        unknown = set(fields) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValidationError(f"unknown intent field {sorted(unknown)[0]!r}")
        tz = fields.get("timezone")
        return cls(
            title=title,
            kind=_kind(kind),
            expires_at=_expiry(expires_at, tz if isinstance(tz, str) else None),
            cooldown_s=_seconds(cooldown) or 0,
            timeout_s=_seconds(timeout),
            **fields,
        )

    def first_run(self, now: datetime) -> datetime | None:
        """When the intent is first due, planned from ``now``; refuses an expiry already past."""
        if self.expires_at is not None and self.expires_at <= now:
            raise ValidationError("expiry is in the past")
        next_run_at = first_due(self.kind, self.schedule, self.zone, now)
        if self.kind == IntentKind.AT and next_run_at is None:
            raise ValidationError("the 'at' time is not valid")
        return next_run_at
