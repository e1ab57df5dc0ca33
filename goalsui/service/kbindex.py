"""The KB index (``service.index``): goal rows and worker intents rebuilt from the goal
trees, the truth; a goal or worker that fails validation keeps its last good intent."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from goalsui.domain.states import ChangeTopic, GoalStatus, IntentKind, IntentStatus
from goalsui.domain.triggers import first_due
from goalsui.domain.views import Problem, is_worker_schedule, worker_intent_key
from goalsui.errors import GoalsuiError, KBError
from goalsui.kb.config import WorkerDef
from goalsui.kb.layout import LoadedGoal
from goalsui.service import index_stamp
from goalsui.service.bindings import binding_problems
from goalsui.service.context import Aggregate
from goalsui.service.homes import ensure_home_threads, home_threads
from goalsui.service.index_stamp import GOAL_HOLDS
from goalsui.service.quick import sqlite_file
from goalsui.store.models import Goal, Intent, IntentRun, Meta

#: ``last_error`` of a worker intent cancelled because its files left the KB.
REMOVED_FROM_KB = ("worker removed from the KB", "goal removed from the KB")


def removed_from_kb(intent: Intent) -> bool:
    """True for a worker intent cancelled because its files left the KB (it may come back)."""
    return intent.status == IntentStatus.CANCELLED and intent.last_error in REMOVED_FROM_KB


def definition_hash(w: WorkerDef) -> str:
    """A fingerprint of what in a worker's definition changes its intent."""
    raw = json.dumps(
        {
            "kind": w.schedule.kind,
            "expr": w.schedule.expr,
            "tz": w.schedule.timezone,
            "runner": w.runner.as_dict() if w.runner else None,
            "timeout": w.timeout.total_seconds() if w.timeout else None,
            "hours": w.active_hours,
        },
        sort_keys=True,
    )
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def _index_rows(
    s: Session, goal_ids: list[str] | None
) -> tuple[dict[str, Goal], dict[str, dict[str, Intent]]]:
    """The goal rows and worker intents (by goal, then worker) of ``goal_ids`` (None: all)."""
    goal_q = select(Goal)
    intent_q = select(Intent).where(col(Intent.goal_id).is_not(None))
    if goal_ids is not None:
        goal_q = goal_q.where(col(Goal.goal_id).in_(goal_ids))
        intent_q = intent_q.where(col(Intent.goal_id).in_(goal_ids))
    goals = {g.goal_id: g for g in s.exec(goal_q).all()}
    workers: dict[str, dict[str, Intent]] = {}
    for intent in s.exec(intent_q).all():
        if intent.goal_id and intent.worker and is_worker_schedule(intent):
            workers.setdefault(intent.goal_id, {})[intent.worker] = intent
    return goals, workers


def _index_goal(
    s: Session, loaded: LoadedGoal, now: datetime, goal: Goal | None, existing: dict[str, Intent]
) -> Goal:
    """Bring one goal row and its workers' intents in line with its files."""
    goal = _goal_row(s, loaded, now, goal)
    goal_active = goal.status == GoalStatus.ACTIVE
    # Workers whose files are broken keep their last good intent.
    prefix = f"{loaded.goal_id}/workers/"
    broken = {
        p.path[len(prefix) :].split("/")[0] for p in loaded.problems if p.path.startswith(prefix)
    }
    if any(p.path == prefix.rstrip("/") for p in loaded.problems):
        broken = set(existing)  # the workers folder itself is unreadable: keep them all
    for name, wdef in loaded.workers.items():
        intent = existing.get(name)
        if intent is not None and _touched_since_ended(loaded.path, name, intent):
            # an ended worker intent comes back: upsert_worker_intent plans it from now
            intent.status = IntentStatus.ACTIVE
            intent.last_error = None
            intent.consecutive_failures = 0
            intent.definition_hash = None  # re-applied (and planned) from the definition
        upsert_worker_intent(s, goal, wdef, intent, goal_active, now)
    for name, intent in existing.items():
        if (
            name not in loaded.workers
            and name not in broken
            and intent.status not in (IntentStatus.CANCELLED, IntentStatus.DONE)
        ):
            intent.status = IntentStatus.CANCELLED
            intent.last_error = "worker removed from the KB"
            intent.updated_at = now
            s.add(intent)
    return goal


def _touched_since_ended(goal_path: Path, worker: str, intent: Intent) -> bool:
    """True when an ended worker's definition.yaml was touched since (brings it back)."""
    if intent.status != IntentStatus.CANCELLED or removed_from_kb(intent):
        return False
    try:
        mtime = (goal_path / "workers" / worker / "definition.yaml").stat().st_mtime
    except OSError:
        return False
    return mtime > intent.updated_at.timestamp()  # aware UTC, as the store hands it out


def _goal_row(s: Session, loaded: LoadedGoal, now: datetime, goal: Goal | None) -> Goal:
    """The goal's row, updated from its definition (an unchanged goal is not written)."""
    d = loaded.definition
    new = goal is None
    if goal is None:
        goal = Goal(
            goal_id=loaded.goal_id,
            name=d.name if d else loaded.goal_id,
            kb_path=str(loaded.path),
            created_at=(d.created_at if d and d.created_at else now),
        )
    values: dict[str, Any] = {"kb_path": str(loaded.path), "error": loaded.error}
    if d is not None:
        values.update(
            name=d.name, task=d.task, owner=d.owner, status=d.status, sort_order=d.sort_order
        )
    if new or any(getattr(goal, key) != value for key, value in values.items()):
        for key, value in values.items():  # unchanged: no write, no change for the consoles
            setattr(goal, key, value)
        goal.updated_at = now
        s.add(goal)
    return goal


def upsert_worker_intent(
    s: Session, goal: Goal, w: WorkerDef, intent: Intent | None, goal_active: bool, now: datetime
) -> Intent:
    """Create or update a worker's intent from its definition (planned from ``now``)."""
    digest = definition_hash(w)
    kind = w.schedule.intent_kind
    if intent is None:
        intent = Intent(
            goal_id=goal.goal_id,
            worker=w.name,
            title=f"{goal.name} / {w.name}",
            kind=kind,
            operation_key=worker_intent_key(goal.goal_id, w.name),
            created_at=now,
        )
    elif intent.definition_hash == digest and not removed_from_kb(intent):
        align_goal_status(intent, goal_active, now)
        s.add(intent)
        return intent
    intent.kind = kind
    intent.title = f"{goal.name} / {w.name}"
    intent.schedule = w.schedule.expr
    intent.timezone = w.schedule.timezone
    intent.runner = w.runner.as_dict() if w.runner else None
    intent.timeout_s = int(w.timeout.total_seconds()) if w.timeout else None
    intent.active_hours = w.active_hours
    intent.definition_hash = digest
    if removed_from_kb(intent):
        intent.status = IntentStatus.ACTIVE
        intent.last_error = None
    if intent.status == IntentStatus.DONE and kind != IntentKind.AT:
        intent.status = IntentStatus.ACTIVE
    if intent.status != IntentStatus.FIRING:
        intent.next_run_at = first_due(kind, intent.schedule, intent.timezone, now)
    if intent.status == IntentStatus.ACTIVE and intent.next_run_at is None:
        intent.status = IntentStatus.DONE
    align_goal_status(intent, goal_active, now)
    intent.updated_at = now
    s.add(intent)  # written with the others at the next flush (one batch)
    return intent


def align_goal_status(intent: Intent, goal_active: bool, now: datetime) -> None:
    """Worker intents follow their goal; only those the goal paused resume with it."""
    if not goal_active and intent.status == IntentStatus.ACTIVE:
        intent.status = IntentStatus.PAUSED
        intent.last_error = "goal paused"
        intent.updated_at = now
    elif not goal_active and intent.status == IntentStatus.FIRING:
        intent.pending_trigger = "pause"  # the running attempt ends, then it stays paused
        intent.updated_at = now
    elif goal_active and intent.status == IntentStatus.PAUSED and intent.last_error in GOAL_HOLDS:
        intent.status = IntentStatus.ACTIVE
        intent.last_error = None
        intent.next_run_at = first_due(intent.kind, intent.schedule, intent.timezone, now)
        intent.updated_at = now


def forget_goal(s: Session, goal_id: str, now: datetime) -> None:
    """Drop a goal's row; its intents end (those that never fired are deleted)."""
    goal = s.get(Goal, goal_id)
    if goal is not None:
        s.delete(goal)
    for intent in s.exec(select(Intent).where(Intent.goal_id == goal_id)).all():
        ran = s.exec(select(IntentRun.id).where(IntentRun.intent_id == intent.id).limit(1)).first()
        if ran is None and intent.worker:
            # never fired (a creation crashed before its rename): no history to keep
            s.delete(intent)
        elif intent.status not in (IntentStatus.CANCELLED, IntentStatus.DONE):
            intent.status = IntentStatus.CANCELLED
            intent.last_error = "goal removed from the KB"
            intent.updated_at = now
            s.add(intent)


class Index(Aggregate):
    """The KB index of one service: goal rows and worker intents follow the goal trees."""

    def sync(self, goal_ids: Iterable[str] | None = None) -> list[Problem]:
        """Rebuild the goal index and worker intents from the KB; returns the problems."""
        db_file = sqlite_file(self.ctx.kb.root, self.ctx.db_url, self.ctx.state_dir)
        # each print is taken before the files it covers are read
        stamp = index_stamp.Stamp(self.ctx.kb.root, self.ctx.state_dir, db_file)
        self.ctx.config(reload=True)
        on_disk = set(self.ctx.kb.goal_ids())
        targets = sorted(on_disk if goal_ids is None else set(goal_ids))
        problems: list[Problem] = []
        if self.ctx.config_error:
            problems.append(Problem(**self.ctx.config_error.as_problem()))
        now = self.ctx.now()
        with self.ctx.store.write() as s:
            self.ctx.store.serialize(s, "kb-sync")  # processes syncing at once queue here
            if db_file is not None:  # the stamp names the token this sync writes
                row = s.get(Meta, index_stamp.META_KEY)
                stamp.previous = row.value if row is not None else None
                s.merge(Meta(key=index_stamp.META_KEY, value=stamp.token))
            # Two reads for all targets instead of two per goal (and an autoflush each).
            goals, workers = _index_rows(s, None if goal_ids is None else targets)
            homes = home_threads(s, None if goal_ids is None else targets)
            threads_written = False
            for goal_id in sorted(set(targets if goal_ids is not None else goals) - on_disk):
                if not self.ctx.kb.creating(goal_id):  # another process is creating it
                    forget_goal(s, goal_id, now)
                    stamp.removed.append(goal_id)
                else:
                    stamp.goals[goal_id] = None  # its row stays: not vouched for
            for goal_id in sorted(set(targets) & on_disk):
                stamp.take(goal_id)
                try:
                    loaded = self.ctx.kb.load_goal(goal_id)
                except GoalsuiError as exc:
                    problems.append(Problem(goal_id, None, str(exc)))
                    stamp.goals[goal_id] = None
                    continue
                problems.extend(Problem(**p.as_problem()) for p in loaded.problems)
                goal = _index_goal(s, loaded, now, goals.get(goal_id), workers.get(goal_id, {}))
                _, wrote = ensure_home_threads(
                    s, goal_id, goal.name, loaded.workers, now, homes.get(goal_id, {})
                )
                threads_written = threads_written or wrote
        stamp.record(partial=goal_ids is not None)
        self.ctx.changed(ChangeTopic.GOALS)
        if threads_written:
            self.ctx.changed(ChangeTopic.THREADS)
        return problems

    def refresh(self) -> list[Problem]:
        """Remove leftovers of crashed creations, then rebuild the index from the KB."""
        self.ctx.kb.cleanup_leftovers()
        return self.sync()

    def doctor(self) -> list[Problem]:
        """Validate the KB (every file) and the database; returns every problem found."""
        problems: list[Problem] = []
        try:
            self.ctx.kb.config()
        except KBError as exc:
            problems.append(Problem(**exc.as_problem()))
        for loaded in self.ctx.kb.scan():
            problems.extend(Problem(**p.as_problem()) for p in loaded.problems)
            for name in loaded.workers:
                prompt = loaded.path / "workers" / name / "prompt.md"
                if not prompt.exists():  # one that cannot be read is among loaded.problems
                    problems.append(
                        Problem(self.ctx.kb.display(prompt), None, "worker has no prompt.md")
                    )
        problems.extend(binding_problems(self.ctx))  # a changed or unusable nightshift.yaml
        # intents left ``firing`` by a process that is gone (lease long expired)
        long_ago = self.ctx.now() - timedelta(minutes=5)
        stuck_q = select(Intent.id).where(
            Intent.status == IntentStatus.FIRING, col(Intent.lease_until) < long_ago
        )
        why = "left in 'firing' by a process that is gone (a scheduler will recover it)"
        try:
            with self.ctx.store.read() as s:
                stuck = s.exec(stuck_q).all()
            problems.extend(Problem(f"intent {i}", None, why) for i in stuck)
        except Exception as exc:  # noqa: BLE001 - reported as a problem, not raised
            problems.append(Problem(self.ctx.db_url_display(), None, f"database: {exc}"))
        return problems
