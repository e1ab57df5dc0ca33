"""The one service API used by the console, the command line and the tool server.

:class:`Service` is a thin facade: its state lives in :class:`ServiceContext` and each
method hands over to the module of its aggregate (named in the section comments), where
its documentation is. Every mutating call leaves a journal entry and announces a
:class:`~goalsui.domain.states.ChangeTopic` so in-process listeners (the scheduler, the
console) react at once; other processes see the change through the database.
See docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goalsui.domain.intent_spec import IntentSpec
from goalsui.domain.states import ChangeTopic, GoalStatus, IntentStatus, RunStatus, RunTrigger
from goalsui.domain.timeutil import utcnow
from goalsui.domain.views import EmitResult, GoalView, Problem, WorkerView
from goalsui.kb.layout import WorkerSeed
from goalsui.kb.ui_settings import read_ui_settings
from goalsui.service import (
    bulk,
    events,
    files,
    goals,
    intents,
    kbindex,
    lifecycle,
    overview,
    review,
    runs,
    threads,
    todos,
    workers,
)
from goalsui.service import (
    journal as journal_log,
)
from goalsui.service.agents import Agents
from goalsui.service.context import ServiceContext
from goalsui.store.models import Event, Intent, IntentRun, Journal, Message, Thread, Todo

if TYPE_CHECKING:
    from goalsui.service.costs import Costs
    from goalsui.service.schedulers import SchedulerInfo, SchedulerRegistration


class Service(ServiceContext):
    """The API of goalsui. Thread-safe for use from worker threads."""

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
        """Open a service: schema on first use, leftovers cleaned, KB index synced
        (:func:`goalsui.service.lifecycle.open_service`)."""
        service = lifecycle.open_service(cls, kb, db_url, state_dir, actor=actor, clock=clock)
        if sync:
            service.refresh_kb()
        return service

    @cached_property
    def costs(self) -> Costs:
        """Spend queries and budget checks (:mod:`goalsui.service.costs`)."""
        from goalsui.service.costs import Costs

        return Costs(self)

    # -- schema and settings (lifecycle.py) --------------------------------------------------
    def schema_status(self) -> dict[str, Any]:
        return lifecycle.schema_status(self)

    def upgrade_schema(self) -> dict[str, Any]:
        return lifecycle.upgrade_schema(self)

    def ui_settings(self) -> dict[str, Any]:
        """The console's raw settings from goalsui.yaml; empty when absent or broken."""
        return read_ui_settings(self.kb.root)

    @property
    def kb_root(self) -> Path:
        """The KB folder (resolved)."""
        return self.kb.root

    # -- bulk records for benchmarks (bulk.py) ----------------------------------------------
    @property
    def database_dialect(self) -> str:
        """The database's SQLAlchemy dialect name (``sqlite``, ``postgresql``)."""
        return self.store.dialect

    def insert_intent_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        bulk.insert_intent_rows(self, rows)

    def count_intents(self) -> int:
        return bulk.count_intents(self)

    def count_runs(self, status: RunStatus | None = None) -> int:
        return bulk.count_runs(self, status)

    def ok_run_counts(self) -> tuple[int, int, int]:
        return bulk.ok_run_counts(self)

    def clear_scheduling(self) -> None:
        bulk.clear_scheduling(self)

    # -- live schedulers (schedulers.py) -----------------------------------------------------------
    def register_scheduler(self, kind: str, owner: str = "") -> SchedulerRegistration:
        """Announce this process as a scheduler of the KB until the registration is closed."""
        from goalsui.service.schedulers import register_scheduler

        return register_scheduler(self.state_dir, self.kb.root, kind, owner, self.now())

    def live_schedulers(self) -> list[SchedulerInfo]:
        """The live scheduler processes registered for this KB (``goalsui daemon``)."""
        from goalsui.service.schedulers import live_schedulers

        return live_schedulers(self.state_dir, self.kb.root)

    # -- change notification (changes.py) ------------------------------------------------------
    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(topic)`` after every change made through this service."""
        return self.changes.subscribe(callback)

    @property
    def notifies_across_processes(self) -> bool:
        """True on PostgreSQL: :meth:`listen_changes` hears other processes' changes."""
        return self.changes.across_processes

    def listen_changes(
        self, callback: Callable[[str], None], *, include_own: bool = False, wait: float = 10.0
    ) -> Callable[[], None]:
        """Hear every process's changes (PostgreSQL; see ``ChangeHub.listen``)."""
        return self.changes.listen(callback, include_own=include_own, wait=wait)

    def change_token(self) -> tuple[Any, ...]:
        return overview.change_token(self)

    def change_stamp(self) -> tuple[Any, ...] | None:
        """Cheap (no query) fingerprint of a SQLite database; None for PostgreSQL."""
        return overview.change_stamp(self)

    # -- journal (journal.py) ------------------------------------------------------------------
    def list_journal(self, limit: int = 200) -> list[Journal]:
        return journal_log.recent(self.store, limit)

    @property
    def agents(self) -> Agents:
        """The agent-facing operations (confined KB, tool calls, transcripts)."""
        return Agents(self)

    # -- KB index (kbindex.py) ----------------------------------------------------------------
    def sync_kb(self, goal_ids: Iterable[str] | None = None) -> list[Problem]:
        return kbindex.sync_kb(self, goal_ids)

    def refresh_kb(self) -> list[Problem]:
        return kbindex.refresh_kb(self)

    def doctor(self) -> list[Problem]:
        return kbindex.doctor(self)

    def capability_warnings(self, goal_ids: Iterable[str] | None = None) -> list[Problem]:
        """Workers' capabilities that would grant nothing, and workers whose runner could
        not start (warnings, not problems)."""
        from goalsui.service import runner_checks

        ids = None if goal_ids is None else list(goal_ids)
        found = kbindex.capability_warnings(self, ids)
        return found + runner_checks.runner_warnings(self, ids)

    # -- goals (goals.py) ------------------------------------------------------------------------
    def setup_goal(
        self,
        name: str,
        task: str,
        workers: Iterable[WorkerSeed] = (),
        *,
        owner: str = "",
        protocol: str | None = None,
        files: Mapping[str, str] | None = None,
        _fail_after_workers: int | None = None,
        _fail_before_rename: bool = False,
    ) -> GoalView:
        return goals.setup_goal(
            self,
            name,
            task,
            workers,
            owner=owner,
            protocol=protocol,
            files=files,
            fail_after_workers=_fail_after_workers,
            fail_before_rename=_fail_before_rename,
        )

    def list_goals(self) -> list[GoalView]:
        return goals.list_goals(self)

    def goals_and_intents(self) -> tuple[list[GoalView], list[Intent]]:
        return goals.goals_and_intents(self)

    def get_goal(self, goal_id: str) -> GoalView:
        return goals.get_goal(self, goal_id)

    def delete_goal(self, goal_id: str) -> None:
        goals.delete_goal(self, goal_id)

    def pause_goal(self, goal_id: str) -> GoalView:
        return goals.set_goal_status(self, goal_id, GoalStatus.PAUSED)

    def resume_goal(self, goal_id: str) -> GoalView:
        return goals.set_goal_status(self, goal_id, GoalStatus.ACTIVE)

    def complete_goal(self, goal_id: str) -> GoalView:
        return goals.set_goal_status(self, goal_id, GoalStatus.COMPLETED)

    # -- workers (workers.py) --------------------------------------------------------------------
    def worker_intent(self, goal_id: str, worker: str) -> Intent:
        return workers.worker_intent(self, goal_id, worker)

    def run_worker_now(self, goal_id: str, worker: str) -> Intent:
        return workers.run_worker_now(self, goal_id, worker)

    def update_worker(self, goal_id: str, worker: str, **changes: Any) -> WorkerView:
        return workers.update_worker(self, goal_id, worker, **changes)

    # -- KB files (files.py) -------------------------------------------------------------------
    def kb_list(self, goal_id: str, rel: str = ".") -> list[dict[str, Any]]:
        return files.kb_list(self, goal_id, rel)

    def kb_read(self, goal_id: str, rel: str) -> str:
        return files.kb_read(self, goal_id, rel)

    def kb_path(self, goal_id: str, rel: str = ".") -> Path:
        return files.kb_path(self, goal_id, rel)

    def kb_write(self, goal_id: str, rel: str, text: str) -> None:
        files.kb_write(self, goal_id, rel, text)

    def append_goal_log(self, goal_id: str, text: str) -> tuple[Path, int]:
        return files.append_goal_log(self, goal_id, text)

    # -- threads and messages (threads.py) ---------------------------------------------------------
    def create_thread(self, title: str, *, private: bool = False) -> Thread:
        return threads.create_thread(self, title, private=private)

    def list_threads(self) -> list[Thread]:
        return threads.list_threads(self)

    def get_thread(self, thread_id: int) -> Thread:
        return threads.get_thread(self, thread_id)

    def find_thread(self, title: str) -> Thread | None:
        return threads.find_thread(self, title)

    def home_thread(self, goal_id: str, worker: str) -> Thread:
        """A worker's home thread (its turns' todos and posts), created if missing."""
        return threads.home_thread(self, goal_id, worker)

    def find_home_thread(self, goal_id: str, worker: str) -> Thread | None:
        return threads.find_home_thread(self, goal_id, worker)

    def messages(
        self, thread_id: int | None = None, *, goal_id: str | None = None, limit: int = 200
    ) -> list[Message]:
        return threads.messages(self, thread_id, goal_id=goal_id, limit=limit)

    def post_message(self, content: str, **where: Any) -> Message:
        """Post to a thread or goal (``thread_id``, ``goal_id``, ``role``, ``intent_id``,
        ``run_id``, ``provenance``; see ``threads.post_message``)."""
        return threads.post_message(self, content, **where)

    # -- todos (todos.py) ------------------------------------------------------------------------
    def list_todos(self, thread_id: int, *, include_done: bool = True) -> list[Todo]:
        return todos.list_todos(self, thread_id, include_done=include_done)

    def add_todo(
        self, thread_id: int, text: str, *, done: bool = False, expected_revision: int | None = None
    ) -> Todo:
        return todos.add_todo(self, thread_id, text, done=done, expected_revision=expected_revision)

    def complete_todo(
        self, thread_id: int, todo_id: int, *, expected_revision: int | None = None
    ) -> Todo:
        return todos.set_todo(self, thread_id, todo_id, True, expected_revision)

    def reopen_todo(
        self, thread_id: int, todo_id: int, *, expected_revision: int | None = None
    ) -> Todo:
        return todos.set_todo(self, thread_id, todo_id, False, expected_revision)

    def import_checklist(
        self, thread_id: int, markdown: str, *, expected_revision: int | None = None
    ) -> list[Todo]:
        return todos.import_checklist(
            self, thread_id, markdown, expected_revision=expected_revision
        )

    # -- intents (intents.py) ----------------------------------------------------------------------
    def create_intent(self, spec: IntentSpec | None = None, /, **fields: Any) -> Intent:
        """Store an :class:`IntentSpec` (an existing ``operation_key`` returns that intent).

        The keyword form (``title=..., kind=..., cooldown="5m"``) builds the spec with
        :meth:`IntentSpec.parse` first.
        """
        if spec is None:
            spec = IntentSpec.parse(**fields)
        elif fields:
            raise TypeError("create_intent takes a spec or keyword fields, not both")
        return intents.create_intent(self, spec)

    def get_intent(self, intent_id: int) -> Intent:
        return intents.get_intent(self, intent_id)

    def list_intents(
        self,
        *,
        status: IntentStatus | str | None = None,
        goal_id: str | None = None,
        thread_id: int | None = None,
        include_ended: bool = True,
    ) -> list[Intent]:
        return intents.list_intents(
            self, status=status, goal_id=goal_id, thread_id=thread_id, include_ended=include_ended
        )

    def search_intents(self, text: str) -> list[Intent]:
        return intents.search_intents(self, text)

    def pause_intent(self, intent_id: int) -> Intent:
        return intents.pause_intent(self, intent_id)

    def resume_intent(self, intent_id: int) -> Intent:
        return review.resume_intent(self, intent_id)

    def cancel_intent(self, intent_id: int) -> Intent:
        return intents.cancel_intent(self, intent_id)

    def run_intent_now(
        self, intent_id: int, *, trigger: RunTrigger | str = RunTrigger.RUN_NOW
    ) -> Intent:
        return intents.run_intent_now(self, intent_id, trigger=trigger)

    def retry_intent(self, intent_id: int) -> Intent:
        return review.retry_intent(self, intent_id)

    # -- runs awaiting review (review.py) ----------------------------------------------------------
    def runs_awaiting_review(self, *, limit: int = 1000) -> list[IntentRun]:
        return review.awaiting_review(self, limit=limit)

    def retry_review(self, run_id: int) -> Intent:
        """Start an interrupted run's intent again now (the run awaits review)."""
        return review.retry_run(self, run_id)

    def dismiss_review(self, run_id: int) -> Intent:
        """Resume an interrupted run's schedule from now without re-running it."""
        return review.dismiss_run(self, run_id)

    # -- runs (runs.py) --------------------------------------------------------------------------
    def list_runs(
        self,
        *,
        failed: bool = False,
        intent_id: int | None = None,
        limit: int = 50,
        since: datetime | None = None,
        include_dismissed: bool = False,
    ) -> list[IntentRun]:
        return runs.list_runs(
            self,
            failed=failed,
            intent_id=intent_id,
            limit=limit,
            since=since,
            include_dismissed=include_dismissed,
        )

    def get_run(self, run_id: int) -> IntentRun:
        return runs.get_run(self, run_id)

    def run_output(self, run_id: int, *, tail_bytes: int = 256 * 1024) -> str:
        return runs.run_output(self, run_id, tail_bytes=tail_bytes)

    def run_log_path(self, run_id: int) -> Path:
        return runs.run_log_path(self, run_id)

    def dismiss_run(self, run_id: int) -> IntentRun:
        return review.dismiss_failure(self, run_id)

    def stop_run(self, run_id: int) -> IntentRun:
        return runs.stop_run(self, run_id)

    def replay_run(self, run_id: int) -> Intent:
        return runs.replay_run(self, run_id)

    def running_runs(self) -> list[IntentRun]:
        return runs.running_runs(self)

    def mark_alerted(
        self, intent_id: int, at: datetime, *, cooldown: timedelta | None = None
    ) -> bool:
        return runs.mark_alerted(self, intent_id, at, cooldown=cooldown)

    # -- events (events.py) ------------------------------------------------------------------------
    def emit_event(self, source: str, payload: Any, delivery_id: str) -> EmitResult:
        return events.emit_event(self, source, payload, delivery_id)

    def get_event(self, event_id: int) -> Event:
        return events.get_event(self, event_id)

    def list_events(self, limit: int = 100) -> list[Event]:
        return events.list_events(self, limit)

    # -- overview (overview.py) --------------------------------------------------------------------
    def schedule_preview(
        self,
        expression: str,
        *,
        tz: str = "UTC",
        start: str | datetime | None = None,
        count: int = 5,
    ) -> dict[str, Any]:
        return overview.schedule_preview(
            expression, tz=tz, start=start, count=count, now=self.now()
        )

    def summary(self) -> dict[str, Any]:
        return overview.summary(self)


__all__ = ["ChangeTopic", "Service"]
