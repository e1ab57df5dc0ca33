"""Workers: a worker's intent, running it now, editing its definition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from goalsui.domain.states import RunTrigger
from goalsui.domain.views import WorkerView
from goalsui.errors import KBError, NotFound
from goalsui.kb.paths import check_name
from goalsui.service import goals, intents, kbindex
from goalsui.service.context import ServiceContext
from goalsui.store.models import Intent, IntentRun


def worker_intent(ctx: ServiceContext, goal_id: str, worker: str) -> Intent:
    """The intent that schedules ``worker`` of ``goal_id``, or :class:`NotFound`."""
    check_name(goal_id, "goal id")
    check_name(worker, "worker name")
    with ctx.store.read() as s:
        intent = s.exec(
            select(Intent).where(Intent.operation_key == kbindex.worker_intent_key(goal_id, worker))
        ).first()
    if intent is None:
        raise NotFound(f"goal '{goal_id}' has no scheduled worker '{worker}'")
    return intent


def run_worker_now(ctx: ServiceContext, goal_id: str, worker: str) -> Intent:
    """Mark the worker's intent due now (the scheduler fires it at once)."""
    intent = worker_intent(ctx, goal_id, worker)
    assert intent.id is not None  # a stored row
    return intents.run_intent_now(ctx, intent.id)


@dataclass(frozen=True)
class RunNowTicket:
    """What ``run now`` triggered: the worker's intent and the newest run id before it was
    made due. Its run is the first run-now run of that intent past ``after_run_id``."""

    intent: Intent
    after_run_id: int


def run_worker_now_ticket(ctx: ServiceContext, goal_id: str, worker: str) -> RunNowTicket:
    """Like :func:`run_worker_now`, returning a ticket for the run it triggers.

    The newest run id is read *before* the intent is made due, so a scheduler that
    starts (and even finishes) the run at once cannot slip past the ticket.
    """
    intent = worker_intent(ctx, goal_id, worker)
    assert intent.id is not None  # a stored row
    with ctx.store.read() as s:
        newest = s.exec(select(func.max(IntentRun.id))).one()
    after = int(newest or 0)
    return RunNowTicket(intents.run_intent_now(ctx, intent.id), after)


def ticket_run(ctx: ServiceContext, ticket: RunNowTicket) -> IntentRun | None:
    """The run a :class:`RunNowTicket` triggered (running or done), or None yet.

    A fire made while a run of the intent was live is recorded at once as a skipped
    run (overlap): that is the ticket's run too.
    """
    with ctx.store.read() as s:
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


def update_worker(ctx: ServiceContext, goal_id: str, worker: str, **changes: Any) -> WorkerView:
    """Edit a worker's schedule, runner, timeout or prompt (comments are kept); a change
    to what is already there writes nothing and journals nothing."""
    before = worker_files(ctx, goal_id, worker)
    ctx.kb.update_worker(goal_id, worker, **changes)
    if worker_files(ctx, goal_id, worker) != before:
        kbindex.sync_kb(ctx, [goal_id])
        ctx.journal("worker updated", f"{goal_id}/{worker}", ", ".join(sorted(changes)))
    view = goals.get_goal(ctx, goal_id)
    found = next((w for w in view.workers if w.name == worker), None)
    if found is None:
        raise NotFound(f"goal '{goal_id}' has no scheduled worker '{worker}'")
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
