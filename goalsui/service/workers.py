"""Workers (``service.workers``): adding, removing, pausing, resuming and showing them;
a worker's intent, running it now, its definition."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from goalsui.domain.names import check_name
from goalsui.domain.records import saved_id
from goalsui.domain.states import RunTrigger
from goalsui.domain.views import WorkerView, worker_intent_key
from goalsui.errors import KBError, NotFound, ValidationError
from goalsui.kb.layout import WorkerSeed
from goalsui.service.authoring import WorkerDetail
from goalsui.service.context import ServiceContext
from goalsui.service.goals import Goals
from goalsui.service.intents import Intents
from goalsui.service.kbindex import Index
from goalsui.store.models import Intent, IntentRun


@dataclass(frozen=True)
class RunNowTicket:
    """What ``run now`` triggered: the worker's intent and the newest run id before it was
    made due. Its run is the first run-now run of that intent past ``after_run_id``."""

    intent: Intent
    after_run_id: int


class Workers:
    """The workers of the goals: their folders, schedules and definitions."""

    def __init__(self, ctx: ServiceContext, goals: Goals, intents: Intents, index: Index) -> None:
        self.ctx = ctx
        self.goals = goals
        self.intents = intents
        self.index = index

    def intent(self, goal_id: str, worker: str) -> Intent:
        """The intent that schedules ``worker`` of ``goal_id``, or :class:`NotFound`."""
        check_name(goal_id, "goal id")
        check_name(worker, "worker name")
        intent = self.intents.by_key(worker_intent_key(goal_id, worker))
        if intent is None:
            raise NotFound(f"goal '{goal_id}' has no scheduled worker '{worker}'")
        return intent

    def add(self, goal_id: str, seed: WorkerSeed) -> WorkerView:
        """Add a worker to a goal and register its schedule; on failure nothing is left."""
        from goalsui.kb import workers

        self.goals.get(goal_id)

        def register() -> None:
            problems = [
                p
                for p in self.index.sync([goal_id])
                if p.path.startswith(f"{goal_id}/workers/{seed.name}/")
            ]
            if problems:
                raise ValidationError(problems[0].message)

        try:
            workers.add_worker(self.ctx.kb, goal_id, seed, register=register)
        except BaseException:
            with contextlib.suppress(Exception):  # the folder is gone: its schedule follows
                self.index.sync([goal_id])
            raise
        self.ctx.journal.record("worker added", f"{goal_id}/{seed.name}")
        return self.view(goal_id, seed.name)

    def remove(self, goal_id: str, worker: str) -> None:
        """Delete a worker's folder; its schedule is cancelled (its run history is kept)."""
        from goalsui.kb import workers

        workers.remove_worker(self.ctx.kb, goal_id, worker)
        self.index.sync([goal_id])
        self.ctx.journal.record("worker removed", f"{goal_id}/{worker}")

    def pause(self, goal_id: str, worker: str) -> Intent:
        """Pause a worker's schedule (a running tick finishes first)."""
        return self.intents.pause(saved_id(self.intent(goal_id, worker)))

    def resume(self, goal_id: str, worker: str) -> Intent:
        """Resume a paused (or auto-disabled) worker, planned from now."""
        return self.intents.resume(saved_id(self.intent(goal_id, worker)))

    def show(self, goal_id: str, worker: str) -> WorkerDetail:
        """A worker's schedule state, definition file and prompt."""
        view = self.view(goal_id, worker)
        last_error = self.intents.get(view.intent_id).last_error if view.intent_id else None
        tree = self.ctx.kb.tree(goal_id)
        return WorkerDetail(
            goal_id=goal_id,
            view=view,
            definition=tree.read(f"workers/{worker}/definition.yaml"),
            prompt=tree.read(f"workers/{worker}/prompt.md"),
            last_error=last_error,
        )

    def run_now(self, goal_id: str, worker: str) -> Intent:
        """Mark the worker's intent due now (the scheduler fires it at once)."""
        return self.intents.run_now(saved_id(self.intent(goal_id, worker)))

    def run_now_ticket(self, goal_id: str, worker: str) -> RunNowTicket:
        """Like :meth:`run_now`, returning a ticket; the newest run id is read before the
        intent is made due, so a run started at once cannot slip past it."""
        intent_id = saved_id(self.intent(goal_id, worker))
        with self.ctx.store.read() as s:
            newest = s.exec(select(func.max(IntentRun.id))).one()
        return RunNowTicket(self.intents.run_now(intent_id), int(newest or 0))

    def ticket_run(self, ticket: RunNowTicket) -> IntentRun | None:
        """The run a ticket triggered (an overlap skip counts), or None yet."""
        with self.ctx.store.read() as s:
            return s.exec(
                select(IntentRun)
                .where(
                    IntentRun.intent_id == ticket.intent.id,
                    col(IntentRun.id) > ticket.after_run_id,
                    IntentRun.trigger == str(RunTrigger.RUN_NOW),
                )
                .order_by(col(IntentRun.id))
                .limit(1)
            ).first()

    def update(self, goal_id: str, worker: str, **changes: Any) -> WorkerView:
        """Edit a worker's schedule, runner, timeout or prompt (comments kept); no-op if same."""
        before = worker_files(self.ctx, goal_id, worker)
        self.ctx.kb.update_worker(goal_id, worker, **changes)
        if worker_files(self.ctx, goal_id, worker) != before:
            self.index.sync([goal_id])
            self.ctx.journal.record(
                "worker updated", f"{goal_id}/{worker}", ", ".join(sorted(changes))
            )
        return self.view(goal_id, worker)

    def view(self, goal_id: str, worker: str) -> WorkerView:
        """A worker as its goal's view shows it, or :class:`NotFound`."""
        found = next((w for w in self.goals.get(goal_id).workers if w.name == worker), None)
        if found is None:
            raise NotFound(f"goal '{goal_id}' has no worker '{worker}'")
        return found


def worker_files(ctx: ServiceContext, goal_id: str, worker: str) -> tuple[bytes | None, ...]:
    """The bytes of a worker's definition.yaml and prompt.md (None: unreadable, or a
    symlink that leads out of the KB: never read)."""
    wdir = ctx.kb.worker_dir(goal_id, worker)
    out: list[bytes | None] = []
    for name in ("definition.yaml", "prompt.md"):
        try:
            out.append(ctx.kb.check_inside(wdir / name).read_bytes())
        except (OSError, KBError):
            out.append(None)
    return tuple(out)
