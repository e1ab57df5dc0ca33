"""Intents (``service.intents``): creation, queries and the operator's actions, each
allowed by :mod:`goalsui.domain.transitions` (the console's keys say the same)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from goalsui.domain.intent_spec import IntentSpec
from goalsui.domain.interrupts import NEEDS_REVIEW
from goalsui.domain.states import OVERLAP, ChangeTopic, IntentKind, IntentStatus, RunTrigger
from goalsui.domain.transitions import Action, intent_actions, refusal
from goalsui.domain.triggers import first_due
from goalsui.errors import Conflict, ValidationError
from goalsui.service import kbindex
from goalsui.service.context import ServiceContext, found
from goalsui.service.goals import Goals
from goalsui.service.index_stamp import GOAL_HOLDS
from goalsui.store.models import Intent, IntentRun, Thread, skipped_run

#: ``pending_trigger`` of a firing intent whose pause waits for the run to end.
PAUSE_PENDING = "pause"
#: ``pending_trigger`` of a firing intent whose run the operator stopped (see scheduler/leases).
STOP_PENDING = "stop"
#: Both: the run is stopped, then the intent stays paused.
STOP_PAUSE_PENDING = "pause+stop"
_PAUSING = (PAUSE_PENDING, STOP_PAUSE_PENDING)


def stop_pending(pending: str | None) -> str:
    """The ``pending_trigger`` after a stop request on a firing intent."""
    return STOP_PAUSE_PENDING if pending in _PAUSING else STOP_PENDING


def require(intent: Intent, action: Action) -> None:
    """Raise :class:`Conflict` unless the intent's state allows ``action``."""
    allowed = intent_actions(intent.status, pause_pending=intent.pending_trigger in _PAUSING)
    if kbindex.removed_from_kb(intent) and (action not in allowed or action == Action.REINSTATE):
        # resuming cannot bring it back: say what does
        raise Conflict(
            f"intent {intent.id} ended because its {intent.last_error}; "
            "restore its files in the KB to bring it back"
        )
    if action not in allowed:
        subject, how = f"intent {intent.id}", f" ('goalsui intent resume {intent.id}')"
        raise Conflict(refusal(subject, intent.status, action, allowed, how_to_resume=how))


def retry_now(i: Intent, now: datetime) -> None:
    """Make a failed, failing or held intent due now, its failure count and review mark reset."""
    require(i, Action.RETRY)
    if (i.last_error or "").startswith(NEEDS_REVIEW):
        i.last_error = None
    i.status = IntentStatus.ACTIVE
    i.consecutive_failures = 0
    i.next_run_at = now
    i.pending_trigger = str(RunTrigger.RETRY)


class Intents:
    """Intents: stored from specs, listed, and paused, resumed, ended, run or retried."""

    def __init__(self, ctx: ServiceContext, goals: Goals) -> None:
        self.ctx = ctx
        self.goals = goals

    def create(self, **fields: Any) -> Intent:
        """Store an intent given as :meth:`IntentSpec.parse` keywords (see :meth:`save`)."""
        return self.save(IntentSpec.parse(**fields))

    def save(self, spec: IntentSpec, *, reply: bool = False) -> Intent:
        """Store a validated spec; an existing ``operation_key`` returns that intent.
        ``reply``: the answer to a user's message, the one intent a private thread accepts."""
        ctx = self.ctx
        if spec.goal_id is not None:
            self.goals.get(spec.goal_id)
        intent = Intent.from_spec(spec, ctx.now())
        private = spec.thread_id is not None and ctx.get(Thread, spec.thread_id, "thread").private
        if private and not reply:
            raise ValidationError(
                f"thread {spec.thread_id} is private: intents and follow-ups cannot be created in it"
            )
        key = spec.operation_key
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
            existing = self.by_key(key) if key else None
            if existing is None:
                raise
            return existing
        ctx.done(ChangeTopic.INTENTS, "intent created", f"intent {intent.id}", intent.title)
        return intent

    def by_key(self, key: str) -> Intent | None:
        """The intent with this operation key, if any."""
        with self.ctx.store.read() as s:
            return s.exec(select(Intent).where(Intent.operation_key == key)).first()

    def get(self, intent_id: int) -> Intent:
        """One intent, or :class:`NotFound`."""
        return self.ctx.get(Intent, intent_id, "intent")

    def _update(
        self, intent_id: int, action: str, apply: Callable[[Intent, datetime], None]
    ) -> Intent:
        """Apply a change to one intent under its row lock, then journal and announce it."""
        now = self.ctx.now()
        with self.ctx.store.write() as s:
            # FOR UPDATE: on PostgreSQL wait for a claim in flight and see its result.
            intent = found(s.get(Intent, intent_id, with_for_update=True), "intent", intent_id)
            apply(intent, now)
            intent.updated_at = now
            s.add(intent)
        self.ctx.done(ChangeTopic.INTENTS, action, f"intent {intent_id}", intent.title)
        return intent

    def pause(self, intent_id: int) -> Intent:
        """Stop future fires; a running attempt finishes first and then stays paused."""

        def apply(i: Intent, now: datetime) -> None:
            require(i, Action.PAUSE)
            if i.status == IntentStatus.FIRING:
                # the scheduler leaves it paused afterwards (a stop asked meanwhile still holds)
                stopping = i.pending_trigger in (STOP_PENDING, STOP_PAUSE_PENDING)
                i.pending_trigger = STOP_PAUSE_PENDING if stopping else PAUSE_PENDING
            elif i.status != IntentStatus.PAUSED:
                i.status = IntentStatus.PAUSED

        return self._update(intent_id, "intent paused", apply)

    def resume(self, intent_id: int) -> Intent:
        """Resume or reinstate an intent, planned from now (no catch-up storm); its runs
        awaiting review are settled and the failure count restarts."""

        def apply(i: Intent, now: datetime) -> None:
            if i.status == IntentStatus.FIRING and i.pending_trigger in _PAUSING:
                # the pause asked during the run is taken back (a stop asked still holds)
                stopping = i.pending_trigger == STOP_PAUSE_PENDING
                i.pending_trigger = STOP_PENDING if stopping else None
                return
            if i.status == IntentStatus.CANCELLED:
                require(i, Action.REINSTATE)
                i.last_error = None
            else:
                require(i, Action.RESUME)
            i.status = IntentStatus.ACTIVE
            if i.last_error in GOAL_HOLDS or (i.last_error or "").startswith(NEEDS_REVIEW):
                i.last_error = None
            i.consecutive_failures = 0
            i.next_run_at = first_due(i.kind, i.schedule, i.timezone, now)
            if i.next_run_at is None and i.kind != IntentKind.EVENT:
                i.status = IntentStatus.DONE

        intent = self._update(intent_id, "intent resumed", apply)
        self._settle(intent_id)
        return intent

    def cancel(self, intent_id: int) -> Intent:
        """End the schedule (a no-op if ended); the scheduler stops a running process."""

        def apply(i: Intent, now: datetime) -> None:
            if i.status in (IntentStatus.CANCELLED, IntentStatus.DONE):
                return
            require(i, Action.END_SCHEDULE)
            i.status = IntentStatus.CANCELLED
            i.next_run_at = None

        return self._update(intent_id, "intent cancelled", apply)

    def run_now(self, intent_id: int, *, trigger: RunTrigger | str = RunTrigger.RUN_NOW) -> Intent:
        """Fire once now; while a run of it is live the fire is recorded skipped (overlap)."""
        now = self.ctx.now()
        with self.ctx.store.write() as s:
            intent = found(
                s.get(Intent, intent_id, with_for_update=True), "intent", intent_id
            )  # see _update
            require(intent, Action.RUN_NOW)
            skipped = intent.status == IntentStatus.FIRING
            if skipped:
                s.add(skipped_run(intent_id, intent.attempts, trigger, now))
            else:
                intent.next_run_at = now
                intent.pending_trigger = str(trigger)
                intent.updated_at = now
                s.add(intent)
        self.ctx.journal.record(
            f"run now (skipped: {OVERLAP})" if skipped else "run now",
            f"intent {intent_id}",
            intent.title,
        )
        self.ctx.changed(ChangeTopic.INTENTS)
        return intent

    def retry(self, intent_id: int) -> Intent:
        """Retry a failed or failing intent now, failure count reset, review marks settled."""
        intent = self._update(intent_id, "intent retried", retry_now)
        self._settle(intent_id)
        return intent

    def _settle(self, intent_id: int) -> None:
        """Clear the review marks of an intent's runs."""
        with self.ctx.store.write() as s:
            runs = list(
                s.exec(
                    select(IntentRun).where(
                        IntentRun.intent_id == intent_id,
                        IntentRun.needs_review == True,  # noqa: E712
                    )
                )
            )
            for run in runs:
                settle(run)
                s.add(run)
        if runs:
            self.ctx.journal.record("review settled", f"intent {intent_id}", f"{len(runs)} run(s)")
            self.ctx.changed(ChangeTopic.RUNS)

    def list(
        self,
        *,
        status: IntentStatus | str | None = None,
        goal_id: str | None = None,
        thread_id: int | None = None,
        include_ended: bool = True,
    ) -> list[Intent]:
        """Intents by id, filtered by status, goal or thread; ``include_ended`` keeps done ones."""
        with self.ctx.store.read() as s:
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


def settle(run: IntentRun) -> None:
    """Take a run off the review list and the Failures list."""
    run.needs_review = False
    run.dismissed = True
