"""Replay one goal's night now, on a fast clock, with the real scheduler, touching
nothing else.

:func:`replay_isolated` (``goalsui nightshift replay``) runs the night on a database of
its own: a fresh SQLite file in a scratch folder under the state directory (kept, so the
replay's runs and logs can be read afterwards), in which only the replayed goal is
indexed from the KB. The operator's database is not written: no other intent is claimed,
moved or run, no run is recorded there with a start in the future, and the goal's real
intents keep their slots (tonight's tasks, tomorrow's report). What the night does to the
KB (the plan's statuses, the report) and to the repository (its branches) is real.

:func:`replay_window` replays in place, on a database that holds nothing else that could
fire (the demo's scratch database, opened without a KB sync): it refuses when another
goal's or thread's intent would fall due in the window.

Either way the service's clock is a :class:`MovingClock` that jumps from one due time to
the next; the scheduler claims and runs each turn at its due time (the runners run for
real, at real speed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.domain.states import IntentStatus
from goalsui.domain.timeutil import MovingClock
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service

#: One turn of a replayed night may take this long before the replay gives up on it.
TURN_TIMEOUT_S = 1800.0
#: Where the replays' own databases and run logs are kept, under the state directory.
REPLAYS_DIR = "replays"


@dataclass(frozen=True)
class Replay:
    """What a replay did: ``(worker, status)`` of each run, and the folder of its records
    (its database ``goalsui.db`` and run logs ``runs/``)."""

    runs: list[tuple[str, str]]
    records: Path


def _replan(service: Service, goal_id: str) -> None:
    """Plan every active intent of the goal from the service clock's now."""
    for intent in service.intents.list(goal_id=goal_id):
        if intent.status == IntentStatus.ACTIVE and intent.id is not None:
            service.intents.pause(intent.id)
            service.intents.resume(intent.id)


def foreign_due(service: Service, goal_id: str, until: datetime) -> list[str]:
    """Titles of the active intents of anything but ``goal_id`` due by ``until``."""
    return [
        f"{i.goal_id or 'thread'}/{i.worker or i.title}"
        for i in service.intents.list()
        if i.goal_id != goal_id
        and i.status == IntentStatus.ACTIVE
        and i.next_run_at is not None
        and i.next_run_at <= until
    ]


async def drive(
    service: Service, clock: MovingClock, goal_id: str, until: datetime
) -> list[tuple[str, str]]:
    """Fire the goal's intents due up to ``until`` in order; ``(worker, status)`` of each run.

    The clock jumps to each due time; each turn runs to its end before the next claim.
    Refuses (before any claim) when another goal's intent would fall due meanwhile: the
    scheduler claims everything due, so the database must hold only this goal's work.
    """
    from goalsui.scheduler import Scheduler

    others = foreign_due(service, goal_id, until)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise ValidationError(
            f"a replay here would also run {shown}; replay on a database of its own "
            "(goalsui nightshift replay does)"
        )
    workers = {i.id: i.worker or "" for i in service.intents.list(goal_id=goal_id)}
    scheduler = Scheduler(service, clock=clock, grace_seconds=1)
    started: list[int] = []
    try:
        while True:
            due = [
                i.next_run_at
                for i in service.intents.list(goal_id=goal_id)
                if i.status == IntentStatus.ACTIVE and i.next_run_at is not None
            ]
            if not due or min(due) > until:
                break
            clock.now = min(due)
            started += await scheduler.tick()
            await scheduler.drain(timeout=TURN_TIMEOUT_S)
    finally:
        await scheduler.stop()
    runs = {r.id: r for r in service.runs.list(limit=len(started) + 10)}
    return [(workers.get(runs[r].intent_id, ""), str(runs[r].status)) for r in started if r in runs]


async def replay_window(
    service: Service,
    clock: MovingClock,
    goal_id: str,
    start: datetime,
    end: datetime,
    *,
    real_now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> list[tuple[str, str]]:
    """In place: re-plan the goal from ``start``, fire what falls due up to ``end``, then
    re-plan from the real time (never from the replay's end: the coming night keeps its
    slots). For a database that holds nothing else (see :func:`drive`)."""
    clock.now = start
    _replan(service, goal_id)
    try:
        return await drive(service, clock, goal_id, end)
    finally:
        clock.now = real_now()
        _replan(service, goal_id)


def records_folder(service: Service, goal_id: str, start: datetime) -> Path:
    """A new folder for one replay's records: ``<state>/replays/<goal>-<start>-<n>``."""
    base = service.state_dir / REPLAYS_DIR
    base.mkdir(parents=True, exist_ok=True)
    stem = f"{goal_id}-{start.astimezone(UTC):%Y%m%dT%H%M}"
    for n in range(1, 10_000):
        folder = base / f"{stem}-{n}"
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder
    raise ValidationError(f"too many replays in {base}; remove some")


async def replay_isolated(service: Service, goal_id: str, start: datetime, end: datetime) -> Replay:
    """Replay ``goal_id`` from ``start`` to ``end`` on a database of its own (see the
    module's text); ``service`` (the operator's) is only read for its KB and state folder.
    """
    from goalsui.service import Service as ServiceClass

    folder = records_folder(service, goal_id, start)
    clock = MovingClock(start)
    scratch = ServiceClass.open(
        service.kb.root, None, folder, actor="scheduler", sync=False, clock=clock
    )
    try:
        service.nightshift.copy_records(goal_id, scratch.nightshift)  # binding and branches
        scratch.index.sync([goal_id])  # only this goal, its intents planned from the start
        runs = await drive(scratch, clock, goal_id, end)
        scratch.nightshift.copy_branch_records(goal_id, service.nightshift)
    finally:
        scratch.close()
    return Replay(runs, folder)
