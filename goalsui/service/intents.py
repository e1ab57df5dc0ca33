"""Intents: creation from an :class:`IntentSpec`, queries, and the operator's actions.

Every action asks :mod:`goalsui.domain.transitions` whether the intent's state allows
it, so the refusals here and the console's disabled keys say the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from goalsui.domain.intent_spec import IntentSpec
from goalsui.domain.interrupts import NEEDS_REVIEW
from goalsui.domain.states import OVERLAP, ChangeTopic, IntentKind, IntentStatus, RunTrigger
from goalsui.domain.transitions import Action, intent_actions, refusal
from goalsui.domain.triggers import first_due
from goalsui.errors import Conflict, NotFound, ValidationError
from goalsui.service import goals, kbindex, threads
from goalsui.service.context import ServiceContext
from goalsui.store.models import Intent, skipped_run

#: ``pending_trigger`` of a firing intent whose pause waits for the run to end.
PAUSE_PENDING = "pause"
#: ``pending_trigger`` of a firing intent whose running run the operator stopped
#: (the scheduler owning the run notices it, see goalsui/scheduler/leases.py).
STOP_PENDING = "stop"
#: Both: the run is stopped, then the intent stays paused.
STOP_PAUSE_PENDING = "pause+stop"


def stop_pending(pending: str | None) -> str:
    """The ``pending_trigger`` after a stop request on a firing intent."""
    return STOP_PAUSE_PENDING if pending in (PAUSE_PENDING, STOP_PAUSE_PENDING) else STOP_PENDING


def create_intent(ctx: ServiceContext, spec: IntentSpec, *, reply: bool = False) -> Intent:
    """Store a validated spec; an existing ``operation_key`` returns that intent instead.

    ``reply``: the answer to a user's message (:mod:`goalsui.service.conversations`), the
    one intent a private thread accepts; every other one (a follow-up) is refused there.
    """
    if spec.goal_id is not None:
        goals.get_goal(ctx, spec.goal_id)
    intent = Intent.from_spec(spec, ctx.now())
    private = spec.thread_id is not None and threads.get_thread(ctx, spec.thread_id).private
    if private and not reply:
        raise ValidationError(
            f"thread {spec.thread_id} is private: intents and follow-ups cannot be created in it"
        )
    key = spec.operation_key
    if key is not None and (existing := intent_by_key(ctx, key)) is not None:
        return existing
    try:
        with ctx.store.write() as s:
            if key is not None:
                found = s.exec(select(Intent).where(Intent.operation_key == key)).first()
                if found is not None:
                    return found
            s.add(intent)
            s.flush()
    except IntegrityError:
        # Another process created the same operation key between our check and insert.
        existing = intent_by_key(ctx, key) if key else None
        if existing is None:
            raise
        return existing
    ctx.journal("intent created", f"intent {intent.id}", intent.title)
    ctx.changed(ChangeTopic.INTENTS)
    return intent


def intent_by_key(ctx: ServiceContext, key: str) -> Intent | None:
    """The intent with this operation key, if any."""
    with ctx.store.read() as s:
        return s.exec(select(Intent).where(Intent.operation_key == key)).first()


def get_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """One intent, or :class:`NotFound`."""
    return ctx.get(Intent, intent_id, "intent")


def list_intents(
    ctx: ServiceContext,
    *,
    status: IntentStatus | str | None = None,
    goal_id: str | None = None,
    thread_id: int | None = None,
    include_ended: bool = True,
) -> list[Intent]:
    """Intents by id, filtered by status, goal or thread; ``include_ended`` keeps done ones."""
    with ctx.store.read() as s:
        q = select(Intent)
        if status:
            q = q.where(Intent.status == str(status))
        if goal_id:
            q = q.where(Intent.goal_id == goal_id)
        if thread_id is not None:
            q = q.where(Intent.thread_id == thread_id)
        if not include_ended:
            q = q.where(col(Intent.status).not_in([IntentStatus.CANCELLED, IntentStatus.DONE]))
        return list(s.exec(q.order_by(col(Intent.id))))


def search_intents(ctx: ServiceContext, text: str) -> list[Intent]:
    """Intents whose title or instruction contains ``text``."""
    like = f"%{text}%"
    with ctx.store.read() as s:
        return list(
            s.exec(
                select(Intent).where(
                    or_(col(Intent.title).like(like), col(Intent.instruction).like(like))
                )
            )
        )


def require(intent: Intent, action: Action) -> None:
    """Raise :class:`Conflict` unless the intent's state allows ``action``."""
    pending = intent.pending_trigger in (PAUSE_PENDING, STOP_PAUSE_PENDING)
    allowed = intent_actions(intent.status, pause_pending=pending)
    if action not in allowed and kbindex.removed_from_kb(intent):
        # resuming cannot bring it back either: say what does
        raise Conflict(
            f"intent {intent.id} ended because its {intent.last_error}; "
            "restore its files in the KB to bring it back"
        )
    if action not in allowed:
        raise Conflict(
            refusal(
                f"intent {intent.id}",
                intent.status,
                action,
                allowed,
                how_to_resume=f" ('goalsui intent resume {intent.id}')",
            )
        )


def _update(
    ctx: ServiceContext, intent_id: int, action: str, apply: Callable[[Intent, datetime], None]
) -> Intent:
    """Apply a change to one intent under its row lock, then journal and announce it."""
    now = ctx.now()
    with ctx.store.write() as s:
        # FOR UPDATE: on PostgreSQL wait for a claim in flight and see its result.
        intent = s.get(Intent, intent_id, with_for_update=True)
        if intent is None:
            raise NotFound(f"no intent {intent_id}")
        apply(intent, now)
        intent.updated_at = now
        s.add(intent)
    ctx.journal(action, f"intent {intent_id}", intent.title)
    ctx.changed(ChangeTopic.INTENTS)
    return intent


def pause_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """Stop future fires; a running attempt finishes first and then stays paused."""

    def apply(i: Intent, now: datetime) -> None:
        require(i, Action.PAUSE)
        if i.status == IntentStatus.FIRING:
            # the scheduler leaves it paused afterwards (a stop asked meanwhile still holds)
            stopping = i.pending_trigger in (STOP_PENDING, STOP_PAUSE_PENDING)
            i.pending_trigger = STOP_PAUSE_PENDING if stopping else PAUSE_PENDING
        elif i.status != IntentStatus.PAUSED:
            i.status = IntentStatus.PAUSED

    return _update(ctx, intent_id, "intent paused", apply)


def resume_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """Resume a paused or auto-disabled intent, or reinstate an ended one.

    Planned from now (no catch-up storm); the failure count starts again.
    """

    def apply(i: Intent, now: datetime) -> None:
        if i.status == IntentStatus.FIRING and i.pending_trigger in (
            PAUSE_PENDING,
            STOP_PAUSE_PENDING,
        ):
            # the pause asked during the run is taken back (a stop asked still holds)
            stopping = i.pending_trigger == STOP_PAUSE_PENDING
            i.pending_trigger = STOP_PENDING if stopping else None
            return
        if i.status == IntentStatus.CANCELLED:
            require(i, Action.REINSTATE)
            if kbindex.removed_from_kb(i):
                raise Conflict(
                    f"intent {i.id} ended because its {i.last_error}; "
                    "restore its files in the KB to bring it back"
                )
            i.last_error = None
        else:
            require(i, Action.RESUME)
        i.status = IntentStatus.ACTIVE
        if i.last_error in kbindex.GOAL_HOLDS or (i.last_error or "").startswith(NEEDS_REVIEW):
            i.last_error = None
        i.consecutive_failures = 0
        i.next_run_at = first_due(i.kind, i.schedule, i.timezone, now)
        if i.next_run_at is None and i.kind != IntentKind.EVENT:
            i.status = IntentStatus.DONE

    return _update(ctx, intent_id, "intent resumed", apply)


def cancel_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """End the schedule; a running process is stopped by the scheduler that runs it.

    Ending an intent that already ended changes nothing.
    """

    def apply(i: Intent, now: datetime) -> None:
        if i.status in (IntentStatus.CANCELLED, IntentStatus.DONE):
            return
        require(i, Action.END_SCHEDULE)
        i.status = IntentStatus.CANCELLED
        i.next_run_at = None

    return _update(ctx, intent_id, "intent cancelled", apply)


def run_intent_now(
    ctx: ServiceContext, intent_id: int, *, trigger: RunTrigger | str = RunTrigger.RUN_NOW
) -> Intent:
    """Fire once now; while a run of it is live the fire is recorded skipped (overlap)."""
    now = ctx.now()
    with ctx.store.write() as s:
        intent = s.get(Intent, intent_id, with_for_update=True)  # see _update
        if intent is None:
            raise NotFound(f"no intent {intent_id}")
        require(intent, Action.RUN_NOW)
        skipped = intent.status == IntentStatus.FIRING
        if skipped:
            s.add(skipped_run(intent_id, intent.attempts, trigger, now))
        else:
            intent.next_run_at = now
            intent.pending_trigger = str(trigger)
            intent.updated_at = now
            s.add(intent)
    ctx.journal(
        f"run now (skipped: {OVERLAP})" if skipped else "run now",
        f"intent {intent_id}",
        intent.title,
    )
    ctx.changed(ChangeTopic.INTENTS)
    return intent


def retry_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """Retry a failed (auto-disabled) or failing intent at once, failure count reset."""

    def apply(i: Intent, now: datetime) -> None:
        require(i, Action.RETRY)
        if (i.last_error or "").startswith(NEEDS_REVIEW):
            i.last_error = None
        i.status = IntentStatus.ACTIVE
        i.consecutive_failures = 0
        i.next_run_at = now
        i.pending_trigger = str(RunTrigger.RETRY)

    return _update(ctx, intent_id, "intent retried", apply)
