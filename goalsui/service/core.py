"""The one service API used by the console, the command line and anything else.

The service owns a KB (the files) and a Store (the records). Every mutating call
leaves a journal entry and notifies in-process listeners (the scheduler, the console)
so they react at once; other processes see the change through the database.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session, col, select

from goalsui.domain.checklist import parse_markdown_checklist
from goalsui.domain.cron import occurrences, validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.matching import filter_matches
from goalsui.domain.models import Event, Goal, Intent, IntentRun, Journal, Message, Thread, Todo
from goalsui.domain.states import ATTENTION_RUNS, IntentKind, IntentStatus, RunStatus
from goalsui.domain.timeutil import load_zone, parse_instant, utcnow
from goalsui.domain.triggers import first_due, validate_schedule
from goalsui.errors import Conflict, GoalsuiError, KBError, NotFound, ValidationError
from goalsui.kb.config import KBConfig, WorkerDef
from goalsui.kb.layout import KB, LoadedGoal, WorkerSeed
from goalsui.kb.paths import check_name
from goalsui.kb.ui_settings import read_ui_settings
from goalsui.store import notify as change_notify
from goalsui.store.db import Store
from goalsui.store.engine import sqlite_url

if TYPE_CHECKING:
    from goalsui.service.costs import Costs

WORKER_KEY = "worker:{goal_id}/{worker}"
MAX_TITLE = 200
MAX_INSTRUCTION = 20_000


def default_state_dir(kb_root: Path) -> Path:
    """Per-KB state folder under the user's state directory (platformdirs)."""
    from platformdirs import user_state_path

    digest = hashlib.sha1(str(kb_root).encode()).hexdigest()[:8]
    return user_state_path("goalsui") / f"{kb_root.name or 'kb'}-{digest}"


@dataclass
class WorkerView:
    name: str
    schedule: str | None
    timezone: str
    kind: str | None
    intent_id: int | None
    next_run_at: datetime | None
    status: str | None
    runner: dict | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "schedule": self.schedule,
            "timezone": self.timezone,
            "intent_id": self.intent_id,
            "next_run_at": self.next_run_at.isoformat(timespec="seconds")
            if self.next_run_at
            else None,
        }


@dataclass
class GoalView:
    goal_id: str
    name: str
    task: str
    status: str
    path: str
    error: str | None
    sort_order: int = 0
    workers: list[WorkerView] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id,
            "name": self.name,
            "task": self.task,
            "status": self.status,
            "path": self.path,
            "workers": [w.as_json() for w in self.workers],
        }


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class EmitResult:
    """What an event did: its id, the intents it fired, and whether it was a replay."""

    event_id: int
    fired: list[int]
    duplicate: bool = False


REMOVED_FROM_KB = ("worker removed from the KB", "goal removed from the KB")


def _removed_from_kb(intent: Intent) -> bool:
    """True for a worker intent cancelled because its files left the KB (it may come back)."""
    return intent.status == IntentStatus.CANCELLED and intent.last_error in REMOVED_FROM_KB


GOAL_HOLDS = ("goal paused", "goal completed", "goal archived")


def _held_by_goal(intent: Intent) -> bool:
    """True for a worker intent paused because its goal is not active."""
    return intent.status == IntentStatus.PAUSED and intent.last_error in GOAL_HOLDS


def worker_intent_key(goal_id: str, worker: str) -> str:
    return WORKER_KEY.format(goal_id=goal_id, worker=worker)


def _definition_hash(w: WorkerDef) -> str:
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


def schedule_preview(
    expression: str,
    *,
    tz: str = "UTC",
    start: str | datetime | None = None,
    count: int = 5,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Preview a cron expression (needs no KB or database): ISO instants with offsets."""
    if not isinstance(count, int) or not 1 <= count <= 1000:
        raise ValidationError("--count must be between 1 and 1000")
    zone = load_zone(tz)
    expr = validate_cron(expression)
    if start is None:
        begin = now or utcnow()
    elif isinstance(start, datetime):
        begin = start
    else:
        begin = parse_instant(start, tz)
    return {
        "expression": expr,
        "timezone": tz,
        "occurrences": [
            t.astimezone(zone).isoformat(timespec="seconds")
            for t in occurrences(expr, tz, begin, count=count)
        ],
    }


class Service:
    """The API of goalsui. Thread-safe for use from worker threads."""

    def __init__(
        self,
        kb: Path | str,
        db_url: str | None = None,
        state_dir: Path | str | None = None,
        *,
        actor: str = "cli",
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kb = KB(kb)
        self.state_dir = (
            Path(state_dir).expanduser().resolve() if state_dir else default_state_dir(self.kb.root)
        )
        self.db_url = db_url or sqlite_url(self.state_dir / "goalsui.db")
        self.store = Store(self.db_url)
        self.actor = actor
        self.clock = clock
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()
        self._config: KBConfig | None = None
        self._config_error: KBError | None = None
        self.origin = change_notify.new_origin()  # names this service in NOTIFY payloads
        self._change_listeners: list[change_notify.ChangeListener] = []

    # -- life cycle ---------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        kb: Path | str,
        db_url: str | None = None,
        state_dir: Path | str | None = None,
        *,
        actor: str = "cli",
        sync: bool = True,
        clock: Callable[[], datetime] = utcnow,
    ) -> Service:
        """Open a service: schema on first use, leftovers cleaned, KB index synced."""
        root = KB(kb).root
        if not root.is_dir():  # checked first: a missing KB creates no state folder
            raise NotFound(
                f"no KB at {root} (create one with 'goalsui init PATH', "
                "or pass --kb / set GOALSUI_KB)"
            )
        try:
            service = cls(kb, db_url, state_dir, actor=actor, clock=clock)
        except OSError as exc:
            raise ValidationError(f"cannot prepare the state folder: {exc}") from None
        try:
            service.store.ensure_schema()
        except (SQLAlchemyError, OSError) as exc:
            service.close()
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
            raise GoalsuiError(
                f"cannot open the database {service.db_url_display()}: {reason}"
            ) from None
        if sync:
            service.refresh_kb()
        return service

    def close(self) -> None:
        for listener in list(self._change_listeners):
            listener.stop()
        self._change_listeners.clear()
        self.store.dispose()

    def now(self) -> datetime:
        return self.clock()

    @cached_property
    def costs(self) -> Costs:
        """Spend queries and budget checks (:mod:`goalsui.service.costs`)."""
        from goalsui.service.costs import Costs

        return Costs(self)

    @property
    def runs_dir(self) -> Path:
        path = self.state_dir / "runs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- change notification ---------------------------------------------------------------
    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(what)`` after every change made through this service."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def changed(self, what: str) -> None:
        # Other processes (schedulers, consoles) hear it through NOTIFY on PostgreSQL.
        change_notify.publish_now(self.store.engine, what, self.origin)
        for callback in list(self._listeners):
            with contextlib.suppress(Exception):  # a listener never breaks the caller
                callback(what)

    @property
    def notifies_across_processes(self) -> bool:
        """True on PostgreSQL: :meth:`listen_changes` hears other processes' changes."""
        return change_notify.supported(self.store.engine)

    def listen_changes(
        self, callback: Callable[[str], None], *, include_own: bool = False, wait: float = 10.0
    ) -> Callable[[], None]:
        """Call ``callback(what)`` when any process changes the database; returns stop().

        PostgreSQL: a LISTEN thread (``callback`` runs in it; hand over to your loop).
        ``what`` is what the publisher passed to :meth:`changed` (intents, runs, goals,
        todos, ...) or ``"reconnected"`` after a lost connection came back (re-read
        everything). The service's own changes are skipped unless ``include_own`` (they
        reach :meth:`subscribe` callbacks already). Returns once LISTEN is active (or
        after ``wait`` s; it keeps retrying). SQLite: a no-op, keep polling.
        """
        if not self.notifies_across_processes:
            return lambda: None
        listener = change_notify.ChangeListener(
            self.store.url, callback, ignore_origin=None if include_own else self.origin
        )
        self._change_listeners.append(listener)
        listener.start(wait=wait)

        def stop() -> None:
            listener.stop()
            if listener in self._change_listeners:
                self._change_listeners.remove(listener)

        return stop

    # -- schema ---------------------------------------------------------------------------------
    def schema_status(self) -> dict[str, Any]:
        """``goalsui db status``: the database's schema revision against this goalsui's."""
        from goalsui.store import schema

        return schema.status(self.store.engine).as_json()

    def upgrade_schema(self) -> dict[str, Any]:
        """``goalsui db upgrade``: apply pending migrations (works on an outdated database)."""
        from goalsui.store import schema

        before, after = schema.upgrade(self.store.engine)
        return {"before": before.as_json(), "after": after.as_json()}

    def journal(
        self, action: str, subject: str = "", detail: str = "", actor: str | None = None
    ) -> None:
        with self.store.write() as s:
            s.add(Journal(actor=actor or self.actor, action=action, subject=subject, detail=detail))

    def list_journal(self, limit: int = 200) -> list[Journal]:
        with self.store.read() as s:
            return list(s.exec(select(Journal).order_by(col(Journal.id).desc()).limit(limit)))

    def change_token(self) -> tuple:
        """A cheap fingerprint of the records; it differs after any change by anyone."""
        with self.store.read() as s:
            return (
                s.exec(select(func.max(Intent.updated_at))).one(),
                s.exec(select(func.max(IntentRun.id))).one(),
                s.exec(select(func.count()).where(IntentRun.status == RunStatus.RUNNING)).one(),
                s.exec(select(func.max(IntentRun.finished_at))).one(),
                s.exec(select(func.max(Journal.id))).one(),
                s.exec(select(func.sum(Thread.revision))).one(),
                s.exec(select(func.max(Message.id))).one(),
                s.exec(select(func.max(Goal.updated_at))).one(),
                s.exec(select(func.max(Event.id))).one(),
            )

    # -- config ---------------------------------------------------------------------------------
    def config(self, *, reload: bool = False) -> KBConfig:
        """The KB config; a broken file keeps the last good version (or the defaults)."""
        if self._config is None or reload:
            try:
                self._config = self.kb.config()
                self._config_error = None
            except KBError as exc:
                self._config_error = exc
                if self._config is None:
                    self._config = KBConfig()
        return self._config

    def ui_settings(self) -> dict[str, Any]:
        """The console's settings from goalsui.yaml (``keymap``, ``theme``), raw.

        Empty when the file is absent or broken (``config()`` reports its problems).
        """
        return read_ui_settings(self.kb.root)

    # -- KB index ---------------------------------------------------------------------------------
    def sync_kb(self, goal_ids: Iterable[str] | None = None) -> list[Problem]:
        """Rebuild the goal index and worker intents from the KB; returns the problems.

        A goal or worker whose files fail validation keeps its last good intent.
        """
        self.config(reload=True)
        on_disk = set(self.kb.goal_ids())
        targets = sorted(on_disk if goal_ids is None else set(goal_ids))
        problems: list[Problem] = []
        if self._config_error:
            problems.append(Problem(**self._config_error.as_problem()))
        now = self.now()
        with self.store.write() as s:
            self.store.serialize(s, "kb-sync")  # processes syncing at once queue here
            # Two reads for all targets instead of two per goal (and an autoflush each).
            goals, workers = self._index_rows(s, None if goal_ids is None else targets)
            for goal_id in targets:
                if goal_id not in on_disk:
                    if not self.kb.creating(goal_id):  # another process is creating it
                        self._forget_goal(s, goal_id, now)
                    continue
                try:
                    loaded = self.kb.load_goal(goal_id)
                except GoalsuiError as exc:
                    problems.append(Problem(goal_id, None, str(exc)))
                    continue
                problems.extend(Problem(**p.as_problem()) for p in loaded.problems)
                self._index_goal(s, loaded, now, goals.get(goal_id), workers.get(goal_id, {}))
            if goal_ids is None:
                known = s.exec(select(Goal.goal_id)).all()
                for goal_id in set(known) - on_disk:
                    if not self.kb.creating(goal_id):  # another process is creating it
                        self._forget_goal(s, goal_id, now)
        self.changed("goals")
        return problems

    @staticmethod
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
            if intent.worker and intent.goal_id:
                workers.setdefault(intent.goal_id, {})[intent.worker] = intent
        return goals, workers

    def _index_goal(
        self,
        s: Session,
        loaded: LoadedGoal,
        now: datetime,
        goal: Goal | None,
        existing: dict[str, Intent],
    ) -> None:
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
        changed = new or any(getattr(goal, key) != value for key, value in values.items())
        if changed:  # an unchanged goal is left alone: no write, no change for the consoles
            for key, value in values.items():
                setattr(goal, key, value)
            goal.updated_at = now
            s.add(goal)
        goal_active = goal.status == "active"
        # Workers whose files are broken keep their last good intent.
        prefix = f"{loaded.goal_id}/workers/"
        broken = {
            p.path[len(prefix) :].split("/")[0]
            for p in loaded.problems
            if p.path.startswith(prefix)
        }
        if any(p.path == prefix.rstrip("/") for p in loaded.problems):
            broken = set(existing)  # the workers folder itself is unreadable: keep them all
        for name, wdef in loaded.workers.items():
            self._upsert_worker_intent(s, goal, wdef, existing.get(name), goal_active, now)
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

    def _upsert_worker_intent(
        self,
        s: Session,
        goal: Goal,
        w: WorkerDef,
        intent: Intent | None,
        goal_active: bool,
        now: datetime,
    ) -> Intent:
        digest = _definition_hash(w)
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
        elif intent.definition_hash == digest and not _removed_from_kb(intent):
            self._align_goal_status(intent, goal_active, now)
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
        if _removed_from_kb(intent):
            intent.status = IntentStatus.ACTIVE
            intent.last_error = None
        if intent.status == IntentStatus.DONE and kind != IntentKind.AT:
            intent.status = IntentStatus.ACTIVE
        if intent.status != IntentStatus.FIRING:
            intent.next_run_at = first_due(kind, intent.schedule, intent.timezone, now)
        if intent.status == IntentStatus.ACTIVE and intent.next_run_at is None:
            intent.status = IntentStatus.DONE
        self._align_goal_status(intent, goal_active, now)
        intent.updated_at = now
        s.add(intent)  # written with the others at the next flush (one batch)
        return intent

    @staticmethod
    def _align_goal_status(intent: Intent, goal_active: bool, now: datetime) -> None:
        """Worker intents follow their goal: a paused goal pauses its workers.

        Only intents the goal paused (marked ``goal paused``/``goal completed``...) resume
        with it; a worker the operator paused on its own stays paused.
        """
        if not goal_active and intent.status == IntentStatus.ACTIVE:
            intent.status = IntentStatus.PAUSED
            intent.last_error = "goal paused"
            intent.updated_at = now
        elif not goal_active and intent.status == IntentStatus.FIRING:
            intent.pending_trigger = "pause"  # the running attempt ends, then it stays paused
            intent.updated_at = now
        elif goal_active and intent.status == IntentStatus.PAUSED and _held_by_goal(intent):
            intent.status = IntentStatus.ACTIVE
            intent.last_error = None
            intent.next_run_at = first_due(intent.kind, intent.schedule, intent.timezone, now)
            intent.updated_at = now

    def _forget_goal(self, s: Session, goal_id: str, now: datetime) -> None:
        goal = s.get(Goal, goal_id)
        if goal is not None:
            s.delete(goal)
        for intent in s.exec(select(Intent).where(Intent.goal_id == goal_id)).all():
            ran = s.exec(
                select(IntentRun.id).where(IntentRun.intent_id == intent.id).limit(1)
            ).first()
            if ran is None and intent.worker:
                # Never fired (e.g. left by a creation that crashed before its rename):
                # no history to keep, so no row is left behind.
                s.delete(intent)
            elif intent.status not in (IntentStatus.CANCELLED, IntentStatus.DONE):
                intent.status = IntentStatus.CANCELLED
                intent.last_error = "goal removed from the KB"
                intent.updated_at = now
                s.add(intent)

    def doctor(self) -> list[Problem]:
        """Validate the KB (every file) and the database; returns every problem found."""
        problems: list[Problem] = []
        try:
            self.kb.config()
        except KBError as exc:
            problems.append(Problem(**exc.as_problem()))
        for loaded in self.kb.scan():
            problems.extend(Problem(**p.as_problem()) for p in loaded.problems)
            for name in loaded.workers:
                prompt = loaded.path / "workers" / name / "prompt.md"
                if not prompt.is_file():
                    problems.append(
                        Problem(self.kb.display(prompt), None, "worker has no prompt.md")
                    )
        try:
            with self.store.read() as s:
                s.exec(select(func.count()).select_from(Intent)).one()
                stuck = s.exec(
                    select(Intent).where(
                        Intent.status == IntentStatus.FIRING,
                        col(Intent.lease_until) < self.now() - timedelta(minutes=5),
                    )
                ).all()
                for intent in stuck:
                    problems.append(
                        Problem(
                            f"intent {intent.id}",
                            None,
                            "left in 'firing' by a process that is gone (a scheduler will recover it)",
                        )
                    )
        except Exception as exc:  # noqa: BLE001 - reported as a problem, not raised
            problems.append(Problem(self.db_url_display(), None, f"database: {exc}"))
        return problems

    def db_url_display(self) -> str:
        """The database URL with any password hidden."""
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).render_as_string(hide_password=True)

    # -- goals ----------------------------------------------------------------------------------
    def setup_goal(
        self,
        name: str,
        task: str,
        workers: Iterable[WorkerSeed] = (),
        *,
        owner: str = "",
        _fail_after_workers: int | None = None,
        _fail_before_rename: bool = False,
    ) -> GoalView:
        """Create a goal tree and register its workers' schedules, all or nothing."""
        now = self.now()

        def register(loaded: LoadedGoal) -> Callable[[], None]:
            created: list[int] = []
            with self.store.write() as s:
                goal = Goal(
                    goal_id=loaded.goal_id,
                    name=loaded.definition.name if loaded.definition else loaded.goal_id,
                    task=task,
                    owner=owner,
                    kb_path=str(self.kb.root / loaded.goal_id),
                    created_at=now,
                    updated_at=now,
                )
                s.add(goal)
                intents = [
                    self._upsert_worker_intent(s, goal, wdef, None, True, now)
                    for wdef in loaded.workers.values()
                ]
                s.flush()  # the ids, for undo
                created.extend(intent.id for intent in intents)  # type: ignore[misc]

            def undo() -> None:
                with self.store.write() as s:
                    for intent_id in created:
                        row = s.get(Intent, intent_id)
                        if row is not None:
                            s.delete(row)
                    row = s.get(Goal, loaded.goal_id)
                    if row is not None:
                        s.delete(row)

            if _fail_before_rename:
                # The rows are committed: a failure here must undo them itself, since
                # create_goal only learns of ``undo`` once register has returned.
                undo()
                raise OSError("injected failure after registering schedules")
            return undo

        loaded = self.kb.create_goal(
            name,
            task,
            workers,
            owner=owner,
            register=register,
            _fail_after_workers=_fail_after_workers,
        )
        self.journal("goal created", loaded.goal_id, name)
        self.changed("goals")
        return self.get_goal(loaded.goal_id)

    def list_goals(self) -> list[GoalView]:
        with self.store.read() as s:
            goals = s.exec(select(Goal).order_by(Goal.sort_order, Goal.name)).all()
            intents = s.exec(select(Intent).where(col(Intent.goal_id).is_not(None))).all()
        by_goal: dict[str, list[Intent]] = {}
        for intent in intents:
            by_goal.setdefault(intent.goal_id or "", []).append(intent)
        return [self._goal_view(g, by_goal.get(g.goal_id, [])) for g in goals]

    def goals_and_intents(self) -> tuple[list[GoalView], list[Intent]]:
        """``list_goals()`` and ``list_intents()`` from one read (the console's refresh)."""
        with self.store.read() as s:
            goals = s.exec(select(Goal).order_by(Goal.sort_order, Goal.name)).all()
            intents = list(s.exec(select(Intent).order_by(Intent.id)).all())
        by_goal: dict[str, list[Intent]] = {}
        for intent in intents:
            if intent.goal_id is not None:
                by_goal.setdefault(intent.goal_id, []).append(intent)
        return [self._goal_view(g, by_goal.get(g.goal_id, [])) for g in goals], intents

    def get_goal(self, goal_id: str) -> GoalView:
        check_name(goal_id, "goal id")
        with self.store.read() as s:
            goal = s.get(Goal, goal_id)
            if goal is None:
                raise NotFound(f"no goal '{goal_id}'")
            intents = s.exec(select(Intent).where(Intent.goal_id == goal_id)).all()
        return self._goal_view(goal, list(intents))

    def _goal_view(self, goal: Goal, intents: list[Intent]) -> GoalView:
        workers = [
            WorkerView(
                name=i.worker or "",
                schedule=i.schedule,
                timezone=i.timezone,
                kind=i.kind,
                intent_id=i.id,
                next_run_at=i.next_run_at,
                status=i.status,
                runner=i.runner,
            )
            for i in sorted(intents, key=lambda i: i.worker or "")
            if i.worker
            and not (
                i.status == IntentStatus.CANCELLED and i.last_error and "removed" in i.last_error
            )
        ]
        return GoalView(
            goal_id=goal.goal_id,
            name=goal.name,
            task=goal.task,
            status=goal.status,
            path=goal.kb_path,
            error=goal.error,
            sort_order=goal.sort_order,
            workers=workers,
        )

    def delete_goal(self, goal_id: str) -> None:
        self.kb.delete_goal(goal_id)
        with self.store.write() as s:
            self._forget_goal(s, goal_id, self.now())
        self.journal("goal deleted", goal_id)
        self.changed("goals")

    def _set_goal_status(self, goal_id: str, status: str) -> GoalView:
        self.kb.set_goal_field(goal_id, status=status)
        now = self.now()
        with self.store.write() as s:
            for intent in s.exec(select(Intent).where(Intent.goal_id == goal_id)).all():
                self._align_goal_status(intent, status == "active", now)
                if intent.status == IntentStatus.PAUSED and intent.last_error == "goal paused":
                    intent.last_error = f"goal {status}"
                s.add(intent)
        self.sync_kb([goal_id])
        self.changed("intents")
        self.journal(f"goal {status}", goal_id)
        return self.get_goal(goal_id)

    def pause_goal(self, goal_id: str) -> GoalView:
        return self._set_goal_status(goal_id, "paused")

    def resume_goal(self, goal_id: str) -> GoalView:
        return self._set_goal_status(goal_id, "active")

    def complete_goal(self, goal_id: str) -> GoalView:
        return self._set_goal_status(goal_id, "completed")

    def worker_intent(self, goal_id: str, worker: str) -> Intent:
        check_name(goal_id, "goal id")
        check_name(worker, "worker name")
        with self.store.read() as s:
            intent = s.exec(
                select(Intent).where(Intent.operation_key == worker_intent_key(goal_id, worker))
            ).first()
        if intent is None:
            raise NotFound(f"goal '{goal_id}' has no scheduled worker '{worker}'")
        return intent

    def run_worker_now(self, goal_id: str, worker: str) -> Intent:
        """Mark the worker's intent due now (the scheduler fires it at once)."""
        intent = self.worker_intent(goal_id, worker)
        return self.run_intent_now(intent.id)  # type: ignore[arg-type]

    # -- KB files -------------------------------------------------------------------------------
    @property
    def kb_root(self) -> Path:
        """The KB folder (resolved)."""
        return self.kb.root

    def kb_list(self, goal_id: str, rel: str = ".") -> list[dict[str, Any]]:
        return self.kb.kb_list(goal_id, rel)

    def kb_read(self, goal_id: str, rel: str) -> str:
        return self.kb.kb_read(goal_id, rel)

    def kb_path(self, goal_id: str, rel: str = ".") -> Path:
        """The confined path of a file or folder in one goal tree (e.g. for $EDITOR)."""
        return self.kb.resolve(goal_id, rel)

    def refresh_kb(self) -> list[Problem]:
        """Remove leftovers of crashed creations, then rebuild the index from the KB."""
        self.kb.cleanup_leftovers()
        return self.sync_kb()

    def kb_write(self, goal_id: str, rel: str, text: str) -> None:
        self.kb.kb_write(goal_id, rel, text)
        self.journal("file written", f"{goal_id}/{rel}")
        if rel.endswith("definition.yaml"):
            self.sync_kb([goal_id])
        self.changed("files")

    def update_worker(self, goal_id: str, worker: str, **changes: Any) -> WorkerView:
        """Edit a worker's schedule, runner, timeout or prompt (comments are kept)."""
        self.kb.update_worker(goal_id, worker, **changes)
        self.sync_kb([goal_id])
        self.journal("worker updated", f"{goal_id}/{worker}", ", ".join(sorted(changes)))
        view = self.get_goal(goal_id)
        found = next((w for w in view.workers if w.name == worker), None)
        if found is None:
            raise NotFound(f"goal '{goal_id}' has no scheduled worker '{worker}'")
        return found

    def append_goal_log(self, goal_id: str, text: str) -> tuple[Path, int]:
        return self.kb.append_log(goal_id, text, self.now())

    # -- threads and messages ----------------------------------------------------------------------
    def create_thread(self, title: str, *, private: bool = False) -> Thread:
        title = " ".join(str(title).split())
        if not title:
            raise ValidationError("a thread needs a title")
        if len(title) > MAX_TITLE:
            raise ValidationError(f"thread title is too long ({MAX_TITLE} characters at most)")
        with self.store.write() as s:
            thread = Thread(title=title, private=private, created_at=self.now())
            s.add(thread)
            s.flush()
        self.journal("thread created", f"thread {thread.id}", title)
        self.changed("threads")
        return thread

    def list_threads(self) -> list[Thread]:
        with self.store.read() as s:
            return list(s.exec(select(Thread).order_by(Thread.id)))

    def get_thread(self, thread_id: int) -> Thread:
        with self.store.read() as s:
            thread = s.get(Thread, thread_id)
        if thread is None:
            raise NotFound(f"no thread {thread_id}")
        return thread

    def find_thread(self, title: str) -> Thread | None:
        with self.store.read() as s:
            return s.exec(select(Thread).where(Thread.title == title)).first()

    def messages(
        self, thread_id: int | None = None, *, goal_id: str | None = None, limit: int = 200
    ) -> list[Message]:
        with self.store.read() as s:
            q = select(Message)
            if thread_id is not None:
                q = q.where(Message.thread_id == thread_id)
            if goal_id is not None:
                q = q.where(Message.goal_id == goal_id)
            rows = s.exec(q.order_by(col(Message.id).desc()).limit(limit)).all()
        return list(reversed(rows))

    def post_message(
        self,
        content: str,
        *,
        thread_id: int | None = None,
        goal_id: str | None = None,
        role: str = "user",
        intent_id: int | None = None,
        run_id: int | None = None,
        provenance: str | None = None,
    ) -> Message:
        if thread_id is not None:
            self.get_thread(thread_id)
        with self.store.write() as s:
            message = Message(
                thread_id=thread_id,
                goal_id=goal_id,
                role=role,
                content=content,
                intent_id=intent_id,
                run_id=run_id,
                provenance=provenance,
                created_at=self.now(),
            )
            s.add(message)
            s.flush()
        self.changed("messages")
        return message

    # -- todos ----------------------------------------------------------------------------------
    def list_todos(self, thread_id: int, *, include_done: bool = True) -> list[Todo]:
        """A thread's checklist: open items first (by position), then done ones."""
        self.get_thread(thread_id)
        with self.store.read() as s:
            q = select(Todo).where(Todo.thread_id == thread_id)
            if not include_done:
                q = q.where(Todo.done == False)  # noqa: E712
            rows = s.exec(q).all()
        return sorted(rows, key=lambda t: (t.done, t.position, t.id or 0))

    def _bump(self, s: Session, thread_id: int, expected_revision: int | None) -> Thread:
        # FOR UPDATE: on PostgreSQL racing writers queue here and re-read the revision
        # (SQLite's BEGIN IMMEDIATE already serialises them; the clause is dropped there).
        thread = s.get(Thread, thread_id, with_for_update=True)
        if thread is None:
            raise NotFound(f"no thread {thread_id}")
        if expected_revision is not None and thread.revision != expected_revision:
            raise Conflict(
                f"thread {thread_id}'s checklist changed (revision {thread.revision}, "
                f"you had {expected_revision}); reload and try again"
            )
        thread.revision += 1
        s.add(thread)
        return thread

    def add_todo(
        self, thread_id: int, text: str, *, done: bool = False, expected_revision: int | None = None
    ) -> Todo:
        text = " ".join(str(text).split())
        if not text:
            raise ValidationError("a todo needs text")
        if len(text) > 2000:
            raise ValidationError("todo text is too long (2000 characters at most)")
        now = self.now()
        with self.store.write() as s:
            self._bump(s, thread_id, expected_revision)
            top = s.exec(select(func.max(Todo.position)).where(Todo.thread_id == thread_id)).one()
            todo = Todo(
                thread_id=thread_id,
                text=text,
                done=done,
                position=(top or 0) + 1,
                created_at=now,
                completed_at=now if done else None,
            )
            s.add(todo)
            s.flush()
        self.journal("todo added", f"thread {thread_id}", text)
        self.changed("todos")
        return todo

    def _set_todo(
        self, thread_id: int, todo_id: int, done: bool, expected_revision: int | None
    ) -> Todo:
        with self.store.write() as s:
            todo = s.get(Todo, todo_id)
            if todo is None or todo.thread_id != thread_id:
                raise NotFound(f"thread {thread_id} has no todo {todo_id}")
            self._bump(s, thread_id, expected_revision)
            todo.done = done
            todo.completed_at = (todo.completed_at or self.now()) if done else None
            s.add(todo)
        self.journal(
            "todo completed" if done else "todo reopened", f"thread {thread_id}", todo.text
        )
        self.changed("todos")
        return todo

    def complete_todo(
        self, thread_id: int, todo_id: int, *, expected_revision: int | None = None
    ) -> Todo:
        return self._set_todo(thread_id, todo_id, True, expected_revision)

    def reopen_todo(
        self, thread_id: int, todo_id: int, *, expected_revision: int | None = None
    ) -> Todo:
        return self._set_todo(thread_id, todo_id, False, expected_revision)

    def import_checklist(
        self, thread_id: int, markdown: str, *, expected_revision: int | None = None
    ) -> list[Todo]:
        """Add every ``- [ ]`` / ``- [x]`` item of a Markdown checklist to a thread."""
        items = [
            (" ".join(text.split()), done) for text, done in parse_markdown_checklist(markdown)
        ]
        if not items:
            raise ValidationError("no '- [ ]' or '- [x]' items found in the checklist")
        if len(items) > 1000:
            raise ValidationError("too many checklist items (1000 at most)")
        for text, _ in items:
            if len(text) > 2000:
                raise ValidationError("todo text is too long (2000 characters at most)")
        now = self.now()
        todos: list[Todo] = []
        with self.store.write() as s:  # all items or none, one revision bump
            self._bump(s, thread_id, expected_revision)
            top = s.exec(select(func.max(Todo.position)).where(Todo.thread_id == thread_id)).one()
            for offset, (text, done) in enumerate(items, start=1):
                todo = Todo(
                    thread_id=thread_id,
                    text=text,
                    done=done,
                    position=(top or 0) + offset,
                    created_at=now,
                    completed_at=now if done else None,
                )
                s.add(todo)
                todos.append(todo)
            s.flush()
        self.journal("checklist imported", f"thread {thread_id}", f"{len(todos)} items")
        self.changed("todos")
        return todos

    # -- intents --------------------------------------------------------------------------------
    def create_intent(
        self,
        *,
        title: str,
        instruction: str = "",
        kind: str,
        schedule: str | None = None,
        timezone: str | None = None,
        thread_id: int | None = None,
        goal_id: str | None = None,
        worker: str | None = None,
        operation_key: str | None = None,
        max_fires: int | None = None,
        expires_at: str | datetime | None = None,
        cooldown: str | None = None,
        event_source: str | None = None,
        event_filter: dict | None = None,
        checklist: str | None = None,
        active_hours: dict | None = None,
        runner: dict | None = None,
        timeout: str | None = None,
    ) -> Intent:
        """Validate and persist an intent; an existing ``operation_key`` returns that intent.

        ``timezone`` is the zone of a cron schedule and of timestamps without a UTC
        offset; left out, cron runs in UTC and a timestamp without an offset is refused.
        """
        title = " ".join(str(title).split())
        if not title:
            raise ValidationError("an intent needs a title")
        if len(title) > MAX_TITLE:
            raise ValidationError(f"title is too long ({MAX_TITLE} characters at most)")
        if len(instruction) > MAX_INSTRUCTION:
            raise ValidationError(f"instruction is too long ({MAX_INSTRUCTION} characters at most)")
        if checklist is not None and len(checklist) > MAX_INSTRUCTION:
            raise ValidationError(f"checklist is too long ({MAX_INSTRUCTION} characters at most)")
        if kind not in set(IntentKind):
            raise ValidationError(f"unknown intent kind {kind!r}")
        given_tz = timezone
        timezone = timezone or "UTC"
        load_zone(timezone)
        if kind == IntentKind.AT and isinstance(schedule, str):
            parse_instant(schedule, given_tz)  # refuses a naive instant without a zone
        schedule = validate_schedule(kind, schedule, timezone)
        if operation_key is not None:
            operation_key = str(operation_key).strip()
            if not operation_key or len(operation_key) > 200 or "\x00" in operation_key:
                raise ValidationError("operation key must be 1-200 characters")
        if max_fires is not None and (not isinstance(max_fires, int) or max_fires < 1):
            raise ValidationError("--max-fires must be a whole number of at least 1")
        expires = None
        if expires_at is not None:
            if isinstance(expires_at, datetime):
                if expires_at.tzinfo is None:
                    raise ValidationError("expiry has no UTC offset")
                expires = expires_at
            else:
                expires = parse_instant(expires_at, given_tz)
        cooldown_s = int(parse_duration(cooldown).total_seconds()) if cooldown else 0
        timeout_s = int(parse_duration(timeout).total_seconds()) if timeout else None
        if kind == IntentKind.EVENT:
            if not event_source:
                raise ValidationError("an event intent needs a source (--event SOURCE)")
            check_name(event_source, "event source")
        if event_filter is not None and not isinstance(event_filter, dict):
            raise ValidationError("an event filter must be a JSON object")
        if goal_id is not None:
            self.get_goal(goal_id)
            if worker is not None:
                check_name(worker, "worker name")
        now = self.now()
        if expires is not None and expires <= now:
            raise ValidationError("expiry is in the past")
        if thread_id is not None:
            thread = self.get_thread(thread_id)
            if thread.private:
                raise ValidationError(
                    f"thread {thread_id} is private: intents and follow-ups cannot be created in it"
                )
        if operation_key is not None:
            existing = self._intent_by_key(operation_key)
            if existing is not None:
                return existing
        intent = Intent(
            title=title,
            instruction=instruction,
            kind=kind,
            schedule=schedule,
            timezone=timezone,
            thread_id=thread_id,
            goal_id=goal_id,
            worker=worker,
            operation_key=operation_key,
            max_fires=max_fires,
            expires_at=expires,
            cooldown_s=cooldown_s,
            event_source=event_source,
            event_filter=event_filter,
            checklist=checklist,
            active_hours=active_hours,
            runner=runner,
            timeout_s=timeout_s,
            next_run_at=first_due(kind, schedule, timezone, now),
            created_at=now,
            updated_at=now,
        )
        if kind == IntentKind.AT and intent.next_run_at is None:
            raise ValidationError("the 'at' time is not valid")
        try:
            with self.store.write() as s:
                if operation_key is not None:
                    found = s.exec(
                        select(Intent).where(Intent.operation_key == operation_key)
                    ).first()
                    if found is not None:
                        return found
                s.add(intent)
                s.flush()
        except IntegrityError:
            # Another process created the same operation key between our check and insert.
            existing = self._intent_by_key(operation_key) if operation_key else None
            if existing is None:
                raise
            return existing
        self.journal("intent created", f"intent {intent.id}", title)
        self.changed("intents")
        return intent

    def _intent_by_key(self, key: str) -> Intent | None:
        with self.store.read() as s:
            return s.exec(select(Intent).where(Intent.operation_key == key)).first()

    def get_intent(self, intent_id: int) -> Intent:
        with self.store.read() as s:
            intent = s.get(Intent, intent_id)
        if intent is None:
            raise NotFound(f"no intent {intent_id}")
        return intent

    def list_intents(
        self,
        *,
        status: str | None = None,
        goal_id: str | None = None,
        thread_id: int | None = None,
        include_ended: bool = True,
    ) -> list[Intent]:
        with self.store.read() as s:
            q = select(Intent)
            if status:
                q = q.where(Intent.status == status)
            if goal_id:
                q = q.where(Intent.goal_id == goal_id)
            if thread_id is not None:
                q = q.where(Intent.thread_id == thread_id)
            if not include_ended:
                q = q.where(col(Intent.status).not_in([IntentStatus.CANCELLED, IntentStatus.DONE]))
            return list(s.exec(q.order_by(Intent.id)))

    def _update_intent(
        self, intent_id: int, action: str, apply: Callable[[Intent, datetime], None]
    ) -> Intent:
        now = self.now()
        with self.store.write() as s:
            # FOR UPDATE: on PostgreSQL wait for a claim in flight and see its result.
            intent = s.get(Intent, intent_id, with_for_update=True)
            if intent is None:
                raise NotFound(f"no intent {intent_id}")
            apply(intent, now)
            intent.updated_at = now
            s.add(intent)
        self.journal(action, f"intent {intent_id}", intent.title)
        self.changed("intents")
        return intent

    def pause_intent(self, intent_id: int) -> Intent:
        def apply(i: Intent, now: datetime) -> None:
            if i.status in (IntentStatus.CANCELLED, IntentStatus.DONE):
                raise Conflict(f"intent {i.id} is {i.status}; it cannot be paused")
            if i.status == IntentStatus.PAUSED:
                return
            if i.status == IntentStatus.FIRING:
                # The running attempt finishes; the scheduler leaves it paused afterwards.
                i.pending_trigger = "pause"
                return
            i.status = IntentStatus.PAUSED

        return self._update_intent(intent_id, "intent paused", apply)

    def resume_intent(self, intent_id: int) -> Intent:
        """Resume a paused or auto-disabled intent, planned from now (no catch-up storm)."""

        def apply(i: Intent, now: datetime) -> None:
            if i.status == IntentStatus.FIRING and i.pending_trigger == "pause":
                i.pending_trigger = None
                return
            if i.status not in (IntentStatus.PAUSED, IntentStatus.FAILED):
                raise Conflict(f"intent {i.id} is {i.status}; only paused or failed intents resume")
            i.status = IntentStatus.ACTIVE
            if i.last_error in GOAL_HOLDS:
                i.last_error = None
            i.consecutive_failures = 0
            i.next_run_at = first_due(i.kind, i.schedule, i.timezone, now)
            if i.next_run_at is None and i.kind != IntentKind.EVENT:
                i.status = IntentStatus.DONE

        return self._update_intent(intent_id, "intent resumed", apply)

    def cancel_intent(self, intent_id: int) -> Intent:
        """End an intent; a running process is stopped by the scheduler that runs it."""

        def apply(i: Intent, now: datetime) -> None:
            if i.status == IntentStatus.CANCELLED:
                return
            i.status = IntentStatus.CANCELLED
            i.next_run_at = None

        return self._update_intent(intent_id, "intent cancelled", apply)

    def run_intent_now(self, intent_id: int, *, trigger: str = "run-now") -> Intent:
        """Fire once now; while a run of it is live the fire is recorded skipped (overlap)."""
        now = self.now()
        with self.store.write() as s:
            intent = s.get(Intent, intent_id, with_for_update=True)  # see _update_intent
            if intent is None:
                raise NotFound(f"no intent {intent_id}")
            if intent.status == IntentStatus.FIRING:
                attempt = intent.attempts
                s.add(
                    IntentRun(
                        intent_id=intent_id,
                        attempt=attempt,
                        trigger=trigger,
                        status=RunStatus.SKIPPED,
                        reason="overlap",
                        planned_at=now,
                        started_at=now,
                        finished_at=now,
                    )
                )
                skipped = True
            else:
                if intent.status not in (IntentStatus.ACTIVE,):
                    raise Conflict(
                        f"intent {intent_id} is {intent.status}; resume it first "
                        f"('goalsui intent resume {intent_id}')"
                    )
                intent.next_run_at = now
                intent.pending_trigger = trigger
                intent.updated_at = now
                s.add(intent)
                skipped = False
        self.journal(
            "run now (skipped: overlap)" if skipped else "run now",
            f"intent {intent_id}",
            intent.title,
        )
        self.changed("intents")
        return intent

    def retry_intent(self, intent_id: int) -> Intent:
        """Retry a failed (auto-disabled) or failing intent at once, failure count reset."""

        def apply(i: Intent, now: datetime) -> None:
            if i.status in (IntentStatus.CANCELLED, IntentStatus.DONE, IntentStatus.FIRING):
                raise Conflict(f"intent {i.id} is {i.status}; nothing to retry")
            i.status = IntentStatus.ACTIVE
            i.consecutive_failures = 0
            i.next_run_at = now
            i.pending_trigger = "retry"

        return self._update_intent(intent_id, "intent retried", apply)

    # -- runs -----------------------------------------------------------------------------------
    def list_runs(
        self,
        *,
        failed: bool = False,
        intent_id: int | None = None,
        limit: int = 50,
        since: datetime | None = None,
        include_dismissed: bool = False,
    ) -> list[IntentRun]:
        if limit < 1 or limit > 100_000:
            raise ValidationError("--limit must be between 1 and 100000")
        with self.store.read() as s:
            q = select(IntentRun)
            if failed:
                q = q.where(col(IntentRun.status).in_([str(x) for x in ATTENTION_RUNS]))
                if not include_dismissed:
                    q = q.where(IntentRun.dismissed == False)  # noqa: E712
            if intent_id is not None:
                q = q.where(IntentRun.intent_id == intent_id)
            if since is not None:
                q = q.where(col(IntentRun.started_at) >= since)
            return list(
                s.exec(
                    q.order_by(col(IntentRun.started_at).desc(), col(IntentRun.id).desc()).limit(
                        limit
                    )
                )
            )

    def get_run(self, run_id: int) -> IntentRun:
        with self.store.read() as s:
            run = s.get(IntentRun, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        return run

    def run_output(self, run_id: int, *, tail_bytes: int = 256 * 1024) -> str:
        """A run's output (the live log while it runs), at most the last ``tail_bytes``."""
        run = self.get_run(run_id)
        path = Path(run.output_path) if run.output_path else self.runs_dir / f"{run_id}.log"
        if path.is_file():
            size = path.stat().st_size
            with path.open("rb") as fh:
                if size > tail_bytes:
                    fh.seek(size - tail_bytes)
                data = fh.read()
            return data.decode("utf-8", errors="replace")
        return run.output_tail or ""

    def run_log_path(self, run_id: int) -> Path:
        return self.runs_dir / f"{run_id}.log"

    def dismiss_run(self, run_id: int) -> IntentRun:
        with self.store.write() as s:
            run = s.get(IntentRun, run_id)
            if run is None:
                raise NotFound(f"no run {run_id}")
            run.dismissed = True
            s.add(run)
        self.journal("run dismissed", f"run {run_id}")
        self.changed("runs")
        return run

    def replay_run(self, run_id: int) -> Intent:
        """Fire a missed (or failed) occurrence again now."""
        run = self.get_run(run_id)
        intent = self.get_intent(run.intent_id)
        if intent.status in (IntentStatus.FAILED, IntentStatus.PAUSED):
            raise Conflict(f"intent {intent.id} is {intent.status}; resume it first")
        result = self.run_intent_now(
            run.intent_id, trigger="catch-up" if run.status == RunStatus.MISSED else "retry"
        )
        self.dismiss_run(run_id)
        return result

    def running_runs(self) -> list[IntentRun]:
        with self.store.read() as s:
            return list(s.exec(select(IntentRun).where(IntentRun.status == RunStatus.RUNNING)))

    def mark_alerted(
        self, intent_id: int, at: datetime, *, cooldown: timedelta | None = None
    ) -> bool:
        """Record an alert at ``at``; with ``cooldown``, only if none was raised within it.

        A compare-and-set (row lock on PostgreSQL, BEGIN IMMEDIATE on SQLite): of several
        schedulers alerting about one intent at once, exactly one gets True.
        """
        with self.store.write() as s:
            intent = s.get(Intent, intent_id, with_for_update=True)
            if intent is None:
                raise NotFound(f"no intent {intent_id}")
            last = intent.last_alert_at
            if cooldown is not None and last is not None and last + cooldown > at:
                return False
            intent.last_alert_at = at
            s.add(intent)
        return True

    # -- events ---------------------------------------------------------------------------------
    def emit_event(self, source: str, payload: Any, delivery_id: str) -> EmitResult:
        """Store an event once per ``(source, delivery_id)`` and make matching intents due.

        Only active event intents of ``source`` whose filter matches the payload fire,
        after their cooldown and expiry checks. A repeated delivery fires nothing.
        """
        check_name(source, "event source")
        delivery_id = str(delivery_id).strip()
        if not delivery_id or len(delivery_id) > 200 or any(ord(c) < 32 for c in delivery_id):
            raise ValidationError("a delivery id must be 1-200 printable characters")
        now = self.now()
        try:
            with self.store.write() as s:
                dup = s.exec(
                    select(Event).where(Event.source == source, Event.delivery_id == delivery_id)
                ).first()
                if dup is not None:
                    return EmitResult(dup.id, [], duplicate=True)  # type: ignore[arg-type]
                event = Event(
                    source=source, delivery_id=delivery_id, payload=payload, received_at=now
                )
                s.add(event)
                s.flush()
                fired: list[int] = []
                candidates = s.exec(
                    select(Intent).where(
                        Intent.kind == IntentKind.EVENT,
                        Intent.event_source == source,
                        col(Intent.status).in_([IntentStatus.ACTIVE, IntentStatus.FIRING]),
                    )
                ).all()
                for intent in candidates:
                    if not filter_matches(intent.event_filter, payload):
                        continue
                    if intent.expires_at is not None and intent.expires_at <= now:
                        intent.status = IntentStatus.DONE
                        intent.updated_at = now
                        s.add(intent)
                        continue
                    if (
                        intent.cooldown_s
                        and intent.last_fired_at is not None
                        and intent.last_fired_at + timedelta(seconds=intent.cooldown_s) > now
                    ):
                        continue
                    if intent.status == IntentStatus.FIRING:
                        s.add(
                            IntentRun(
                                intent_id=intent.id,  # type: ignore[arg-type]
                                attempt=intent.attempts,
                                trigger="event",
                                status=RunStatus.SKIPPED,
                                reason="overlap",
                                planned_at=now,
                                started_at=now,
                                finished_at=now,
                                event_id=event.id,
                            )
                        )
                        continue
                    intent.next_run_at = now
                    intent.pending_trigger = "event"
                    intent.pending_event_id = event.id
                    intent.last_fired_at = now
                    intent.updated_at = now
                    s.add(intent)
                    fired.append(intent.id)  # type: ignore[arg-type]
                event.matched_intent_ids = fired
                s.add(event)
        except IntegrityError:
            # The same delivery stored by another process at the same moment.
            with self.store.read() as s:
                dup = s.exec(
                    select(Event).where(Event.source == source, Event.delivery_id == delivery_id)
                ).one()
            return EmitResult(dup.id, [], duplicate=True)  # type: ignore[arg-type]
        self.journal(
            "event received",
            f"{source}/{delivery_id}",
            f"fired intents {fired}" if fired else "fired nothing",
            actor="hooks" if self.actor != "cli" else "cli",
        )
        self.changed("intents")
        return EmitResult(event.id, fired, duplicate=False)  # type: ignore[arg-type]

    def get_event(self, event_id: int) -> Event:
        with self.store.read() as s:
            event = s.get(Event, event_id)
        if event is None:
            raise NotFound(f"no event {event_id}")
        return event

    def list_events(self, limit: int = 100) -> list[Event]:
        with self.store.read() as s:
            return list(s.exec(select(Event).order_by(col(Event.id).desc()).limit(limit)))

    # -- schedules ----------------------------------------------------------------------------------
    def schedule_preview(
        self,
        expression: str,
        *,
        tz: str = "UTC",
        start: str | datetime | None = None,
        count: int = 5,
    ) -> dict[str, Any]:
        """The next ``count`` occurrences of a cron expression in ``tz`` after ``start``."""
        return schedule_preview(expression, tz=tz, start=start, count=count, now=self.now())

    # -- overview ---------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Counts for the status bar and the plain-text dashboard."""
        now = self.now()
        with self.store.read() as s:
            goals = s.exec(select(func.count()).select_from(Goal)).one()
            goal_errors = s.exec(select(func.count()).where(col(Goal.error).is_not(None))).one()
            by_status = dict(
                s.exec(select(Intent.status, func.count()).group_by(Intent.status)).all()
            )
            due = s.exec(
                select(func.count()).where(
                    Intent.status == IntentStatus.ACTIVE, col(Intent.next_run_at) <= now
                )
            ).one()
            running = s.exec(
                select(func.count()).where(IntentRun.status == RunStatus.RUNNING)
            ).one()
            failed = s.exec(
                select(func.count()).where(
                    col(IntentRun.status).in_([str(x) for x in ATTENTION_RUNS]),
                    IntentRun.dismissed == False,  # noqa: E712
                    col(IntentRun.started_at) >= now - timedelta(hours=24),
                )
            ).one()
            upcoming = s.exec(
                select(Intent)
                .where(Intent.status == IntentStatus.ACTIVE, col(Intent.next_run_at).is_not(None))
                .order_by(Intent.next_run_at)
                .limit(10)
            ).all()
        return {
            "goals": goals,
            "goal_errors": goal_errors,
            "intents": by_status,
            "due": due,
            "running": running,
            "failed_24h": failed,
            "upcoming": list(upcoming),
        }

    def search_intents(self, text: str) -> list[Intent]:
        like = f"%{text}%"
        with self.store.read() as s:
            return list(
                s.exec(
                    select(Intent).where(
                        or_(col(Intent.title).like(like), col(Intent.instruction).like(like))
                    )
                )
            )
