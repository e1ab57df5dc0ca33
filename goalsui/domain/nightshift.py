"""Pure rules of the nightshift: nights, slots, branch names and plan items.

A night is named by the local date it starts (noon to noon in the goal's timezone); the
plan, the branches, the report file and the console all name a night by :func:`night_of`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from goalsui.domain.text import one_line
from goalsui.domain.timeutil import load_zone, localize
from goalsui.errors import ValidationError

BRANCH_PREFIX = "nightshift/"
#: The night turns over at noon local time.
NOON = time(12, 0)
#: Worker slots are spread over this window (minutes after midnight, the end past 24 h).
FIRST_SLOT = 20 * 60 + 30
LAST_SLOT_END = 24 * 60 + 7 * 60
COMMANDER_CRON = "0 20 * * *"
REPORTER_CRON = "30 7 * * *"
MAX_TASK = 2000
MAX_WORKERS = 12

# statuses of a plan item
PLANNED = "planned"
RUNNING = "running"
DONE = "done"  # the agent committed something on the branch
NO_COMMITS = "no-commits"
FAILED = "failed"
APPROVED = "approved"
REJECTED = "rejected"
STATUSES = (PLANNED, RUNNING, DONE, NO_COMMITS, FAILED, APPROVED, REJECTED)

_SLUG = re.compile(r"[^a-z0-9]+")


def night_of(when: datetime, tz: str | tzinfo | None = None) -> date:
    """The night ``when`` belongs to: before noon in ``tz``, the night that began the
    evening before (02:30 on the 4th is the night of the 3rd)."""
    local = when if tz is None else when.astimezone(load_zone(tz))
    return local.date() if local.time() >= NOON else local.date() - timedelta(days=1)


def night_window(night: date, tz: str | tzinfo) -> tuple[datetime, datetime]:
    """The night of ``night``: noon on its date to noon the next day in ``tz``, aware."""
    zone = load_zone(tz)
    start = localize(datetime.combine(night, NOON), zone)
    return start, localize(datetime.combine(night + timedelta(days=1), NOON), zone)


def slug(text: str, limit: int = 40) -> str:
    """A branch-safe slug of a task's text (lowercase ASCII, dashes)."""
    value = _SLUG.sub("-", text.lower()).strip("-")
    if len(value) > limit:
        cut = value[: limit + 1].rfind("-")
        value = value[: cut if cut > limit // 2 else limit]
    return value.strip("-") or "task"


def report_file(night: date) -> str:
    """The morning report's file name in ``reports/``: the night's start date."""
    return f"{night.isoformat()}.md"


def report_heading(name: str, night: date) -> str:
    """The first line of the report of ``night``: ``# <goal name> report, night of <date>``."""
    return f"# {name} report, night of {night.isoformat()}"


_LEGACY_HEADING = re.compile(r"^# .* report (\d{4}-\d{2}-\d{2})\s*$")


def report_night(named: date, first_line: str) -> tuple[date, bool]:
    """The night a stored report is about, and whether its name is the old one.

    Old reports are named by their morning (heading ending in that date) and are about
    the night before their name; any other file is named by its night."""
    match = _LEGACY_HEADING.match(first_line.strip())
    if match and match.group(1) == named.isoformat():
        return named - timedelta(days=1), True
    return named, False


def branch_name(night: date, worker: str, task: str) -> str:
    """``nightshift/YYYY-MM-DD/<worker>-<task-slug>``."""
    return f"{BRANCH_PREFIX}{night.isoformat()}/{worker}-{slug(task)}"


def worker_slots(count: int) -> list[str]:
    """Cron expressions of ``count`` worker slots spread over 20:30-07:00."""
    if not 1 <= count <= MAX_WORKERS:
        raise ValidationError(f"a nightshift has 1 to {MAX_WORKERS} workers, not {count}")
    step = (LAST_SLOT_END - FIRST_SLOT) // count
    minutes = [(FIRST_SLOT + index * step) % (24 * 60) // 5 * 5 for index in range(count)]
    return [f"{minute % 60} {minute // 60} * * *" for minute in minutes]


def parse_night(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError as exc:
        raise ValidationError(f"not a date (YYYY-MM-DD): {text!r}") from exc


def check_task(task: str) -> str:
    """A task is one line of text, 1 to 2,000 characters."""
    too_long = f"a task is at most {MAX_TASK} characters"
    return one_line(task, MAX_TASK, empty="a task needs some text", too_long=too_long)


@dataclass(frozen=True)
class PlanItem:
    """One task of one night for one worker, with what became of it."""

    night: date
    worker: str
    task: str
    status: str = PLANNED
    branch: str | None = None
    commits: int | None = None
    check: str | None = None  # "passed" | "failed (exit 1)" | None when no check
    run_id: int | None = None
    summary: str | None = None
    reason: str | None = None  # why it was planned (commander) or why it failed
    #: what moved outside the task's branch during it, and what goalsui did about it
    stray: str | None = None

    @property
    def key(self) -> tuple[date, str, str]:
        return (self.night, self.worker, self.task)

    def as_yaml(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "night": self.night.isoformat(),
            "worker": self.worker,
            "task": self.task,
            "status": self.status,
        }
        return data | {k: v for k in _OPTIONAL if (v := getattr(self, k)) is not None}

    def as_json(self) -> dict[str, Any]:
        return self.as_yaml()


#: a plan item's optional fields, in the order state.yaml lists them (all text but two)
_OPTIONAL = ("branch", "commits", "check", "run_id", "summary", "reason", "stray")
_NUMBERS = ("commits", "run_id")
_TEXTS = tuple(name for name in _OPTIONAL if name not in _NUMBERS)


def item_from_yaml(data: Any) -> PlanItem | None:
    """A plan item from ``state.yaml``, or None for anything that is not one."""
    if not isinstance(data, dict):
        return None
    try:
        night = data["night"]
        night = night if isinstance(night, date) else parse_night(str(night))
        status = str(data.get("status") or PLANNED)
        optional: dict[str, Any] = {k: str(data[k]) for k in _TEXTS if data.get(k)}
        optional.update((k, int(data[k])) for k in _NUMBERS if isinstance(data.get(k), int))
        return PlanItem(
            night=night,
            worker=str(data["worker"]),
            task=str(data["task"]),
            status=status if status in STATUSES else PLANNED,
            **optional,
        )
    except (KeyError, ValidationError, TypeError, ValueError):
        return None


def items_for(items: list[PlanItem], night: date, worker: str) -> list[PlanItem]:
    """The items a worker takes at its slot: planned for that night, not yet done."""
    return [i for i in items if i.night == night and i.worker == worker and i.status == PLANNED]
