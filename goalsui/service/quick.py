"""The console's first records, read with the standard library before the database stack
is imported (SQLAlchemy and SQLModel cost a cold process more than Textual does).

Import nothing from the service's other modules here: they load the ORM."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from goalsui.domain.budget import Spend
from goalsui.domain.records import GoalRecord, IntentRecord, RunRecord, ThreadRecord, TodoRecord
from goalsui.domain.states import ATTENTION_RUNS, IntentStatus, RunStatus
from goalsui.domain.views import GoalView, by_goal, goal_view, quiet_home_thread
from goalsui.store import frame_sql
from goalsui.store.snapshot import Snapshot, file_stamp, open_snapshot, stamp

if TYPE_CHECKING:
    from goalsui.kb.confined import ConfinedTree
    from goalsui.service.quick_costs import BudgetLine

#: the same limits as the console's dashboard read
RECENT_LIMIT = 20_000
ATTENTION_LIMIT = 300
DB_FILE = "goalsui.db"
__all__ = [
    "QuickRecords",
    "file_stamp",
    "goal_files",
    "read_records",
    "read_snapshot",
    "sqlite_file",
]
R = TypeVar("R")

#: the run statuses the Failures list shows, as SQL parameters and their placeholders
_ATTENTION = sorted(str(s) for s in ATTENTION_RUNS)
_ATTENTION_MARKS = ", ".join("?" for _ in _ATTENTION)


@dataclass
class QuickRecords:
    """The main screen's records, the values the service's dashboard read gives."""

    goals: list[GoalView]
    intents: dict[int, IntentRecord]
    running: dict[int, RunRecord]
    recent: dict[int, list[RunRecord]]
    attention: list[RunRecord]
    disabled: list[IntentRecord]
    threads: list[tuple[ThreadRecord, list[TodoRecord]]]
    summary: dict[str, Any]
    spend_today: Spend | None = None
    #: each goal's budget lines (read when the KB root is given)
    budgets: dict[str, list[BudgetLine]] = field(default_factory=dict)


def default_state_dir(kb_root: Path) -> Path:
    """Per-KB state folder under the user's state directory (platformdirs)."""
    from platformdirs import user_state_path

    digest = hashlib.sha1(str(kb_root).encode()).hexdigest()[:8]
    return user_state_path("goalsui") / f"{kb_root.name or 'kb'}-{digest}"


def sqlite_file(kb_root: Path, db_url: str | None, state_dir: str | Path | None) -> Path | None:
    """The SQLite file the service would open (None: not a plain SQLite file URL)."""
    if db_url:
        rest = db_url.removeprefix("sqlite:///")
        plain_file = rest != db_url and "?" not in rest and not rest.startswith("file:")
        return Path(rest) if plain_file and rest not in ("", ":memory:") else None
    if state_dir:
        return Path(state_dir).expanduser().resolve() / DB_FILE
    return default_state_dir(Path(kb_root).expanduser().resolve()) / DB_FILE


def goal_files(kb_root: Path, goal_id: str) -> ConfinedTree:
    """A goal's tree of files before the service is open (``service.files.tree`` once it
    is): reading them needs no database."""
    from goalsui.kb.confined import goal_tree  # not before the first frame: on first use

    return goal_tree(kb_root, goal_id)


def read_snapshot(path: Path, read: Callable[[Snapshot], R]) -> R | None:
    """``read`` over a read-only snapshot of the SQLite file at ``path``; None when the file
    cannot be read at the current schema or the read fails (the service's read follows)."""
    snap = open_snapshot(path)
    if snap is None:
        return None
    try:
        return read(snap)
    except (sqlite3.Error, ValueError):
        return None
    finally:
        snap.close()


def read_records(
    path: Path, now: datetime, span: timedelta, kb_root: Path | None = None
) -> QuickRecords | None:
    """The records from the SQLite file at ``path``, or None (the service's read follows);
    with ``kb_root``, the goals' budget lines too."""
    return read_snapshot(path, lambda snap: _read(snap, now, span, kb_root))


def _read(snap: Snapshot, now: datetime, span: timedelta, kb_root: Path | None) -> QuickRecords:
    goal_rows = snap.records(GoalRecord, "goal", "ORDER BY sort_order, name")
    intent_rows = snap.records(IntentRecord, "intent", "ORDER BY id")
    grouped = by_goal(intent_rows)
    newest_first = "ORDER BY started_at DESC, id DESC LIMIT ?"
    recent: dict[int, list[RunRecord]] = defaultdict(list)
    for run in snap.records(RunRecord, "intent_run", f"WHERE started_at >= ? {newest_first}",
                            (stamp(now - span), RECENT_LIMIT)):  # fmt: skip
        recent[run.intent_id].append(run)
    for runs in recent.values():
        runs.sort(key=lambda r: (r.started_at, r.id))
    attention = snap.records(
        RunRecord,
        "intent_run",
        f"WHERE status IN ({_ATTENTION_MARKS}) AND dismissed = 0 {newest_first}",
        (*_ATTENTION, ATTENTION_LIMIT),
    )
    records = QuickRecords(
        goals=[goal_view(g, grouped.get(g.goal_id, [])) for g in goal_rows],
        intents={i.id: i for i in intent_rows},
        running={
            r.intent_id: r
            for r in snap.records(
                RunRecord, "intent_run", "WHERE status = ?", (str(RunStatus.RUNNING),)
            )
        },
        recent=dict(recent),
        attention=attention,
        disabled=[i for i in intent_rows if i.status == IntentStatus.FAILED],
        threads=_threads(snap),
        summary=_summary(snap, now),
        spend_today=_spend_today(snap, now),
    )
    if kb_root is not None:
        from goalsui.service.quick_costs import goal_budget_lines

        records.budgets = goal_budget_lines(snap, kb_root, records.goals, now)
    return records


def _threads(snap: Snapshot) -> list[tuple[ThreadRecord, list[TodoRecord]]]:
    todos: dict[int, list[TodoRecord]] = defaultdict(list)
    for todo in snap.records(TodoRecord, "todo"):
        todos[todo.thread_id].append(todo)
    return [
        (t, sorted(todos.get(t.id, []), key=lambda d: (d.done, d.position, d.id)))
        for t in snap.records(ThreadRecord, "thread", "ORDER BY id")
        if not quiet_home_thread(t, todos.get(t.id, []))
    ]


def _summary(snap: Snapshot, now: datetime) -> dict[str, Any]:
    """The counts of the service's summary (its own statements), from the same moment."""
    return {
        "goals": snap.scalar(frame_sql.GOAL_COUNT),
        "goal_errors": snap.scalar(frame_sql.GOAL_ERROR_COUNT),
        "intents": dict(snap.conn.execute(frame_sql.INTENTS_BY_STATUS)),
        "due": snap.scalar(frame_sql.DUE_COUNT, (stamp(now),)),
        "running": snap.scalar(frame_sql.RUNNING_COUNT),
        "failed_24h": snap.scalar(frame_sql.ATTENTION_SINCE, (stamp(now - timedelta(hours=24)),)),
    }


def _spend_today(snap: Snapshot, now: datetime) -> Spend:
    """What runs started since local midnight reported, as the service's day total counts."""
    start = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    row = snap.conn.execute(
        frame_sql.SPEND_BETWEEN, (stamp(start), stamp(start + timedelta(days=1)))
    ).fetchone()
    return Spend(usd=float(row[0]), tokens=int(row[1]), runs=int(row[2]), unknown=int(row[3]))
