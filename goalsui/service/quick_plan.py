"""The plan for the console's timeline, read with the standard library before the database
stack is imported: the records :func:`goalsui.scheduler.plan.plan` reads through the
service, from a read-only snapshot of the SQLite file, handed to the same pure rules.

Import nothing from the service's other modules here: they load the ORM."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from goalsui.domain.planned import PlannedFire, plan_window
from goalsui.domain.planner import HISTORY, HISTORY_LIMIT, plan_fires
from goalsui.domain.records import IntentRecord, RunRecord
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.errors import KBError
from goalsui.kb.config import KBConfig
from goalsui.kb.layout import KB
from goalsui.service.quick import read_snapshot
from goalsui.store.snapshot import Snapshot, stamp

#: the statuses of ended intents, which ``service.intents.list(include_ended=False)`` leaves out
_ENDED = (str(IntentStatus.CANCELLED), str(IntentStatus.DONE))


def read_plan(db: Path, kb_root: Path, now: datetime, until: datetime) -> list[PlannedFire] | None:
    """What fires from ``now`` until ``until``, as ``plan(service, now, until)`` says; None
    when the file cannot be read at the current schema (the service's plan follows)."""
    now, until = plan_window(now, until)
    records = read_snapshot(db, lambda snap: _read(snap, now))
    if records is None:
        return None
    kb = KB(kb_root)
    try:
        config = kb.config()
    except KBError:  # as the service: a broken config file plans with the defaults
        config = KBConfig()
    return plan_fires(*records, config, now, until, read=kb.kb_read)


def _read(
    snap: Snapshot, now: datetime
) -> tuple[list[IntentRecord], list[RunRecord], list[RunRecord]]:
    """The service's three reads: the intents not ended, the recent runs, the running ones."""
    intents = snap.records(IntentRecord, "intent", "WHERE status NOT IN (?, ?) ORDER BY id", _ENDED)
    history = snap.records(
        RunRecord,
        "intent_run",
        "WHERE started_at >= ? ORDER BY started_at DESC, id DESC LIMIT ?",
        (stamp(now - HISTORY), HISTORY_LIMIT),
    )
    running = snap.records(RunRecord, "intent_run", "WHERE status = ?", (str(RunStatus.RUNNING),))
    return intents, history, running
