"""Runs awaiting review (``service.review``): an interrupted run of an
``on_interrupt: review`` intent, its intent paused; the operator retries the fire or
dismisses it (resuming from now). Both refuse a run that is not awaiting review."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from goalsui.domain.interrupts import NEEDS_REVIEW
from goalsui.domain.states import ChangeTopic, IntentKind, IntentStatus
from goalsui.domain.triggers import first_due
from goalsui.errors import Conflict
from goalsui.service.context import ServiceContext, found
from goalsui.service.intents import retry_now, settle
from goalsui.store.models import Intent, IntentRun


class Review:
    """The runs awaiting the operator's decision, and the decision."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    def _decide(
        self, run_id: int, action: str, apply: Callable[[Intent, datetime], None]
    ) -> Intent:
        """Apply the operator's decision to a run awaiting review and its intent, at once."""
        now = self.ctx.now()
        with self.ctx.store.write() as s:
            run = found(s.get(IntentRun, run_id), "run", run_id)
            if not run.needs_review:
                raise Conflict(f"run {run_id} is not awaiting review (status {run.status})")
            intent = found(
                s.get(Intent, run.intent_id, with_for_update=True), "intent", run.intent_id
            )
            apply(intent, now)
            settle(run)
            intent.updated_at = now
            s.add(run)
            s.add(intent)
        self.ctx.journal.record(action, f"run {run_id}", f"intent {intent.id}: {intent.title}")
        self.ctx.changed(ChangeTopic.RUNS)
        self.ctx.changed(ChangeTopic.INTENTS)
        return intent

    def retry(self, run_id: int) -> Intent:
        """Start the interrupted fire again now and resume the intent."""
        return self._decide(run_id, "run retried after review", retry_now)

    def dismiss(self, run_id: int) -> Intent:
        """Resume the intent from now without the interrupted fire; an intent no longer
        held for this review keeps its state (only the run's mark is cleared)."""

        def apply(i: Intent, now: datetime) -> None:
            marked = (i.last_error or "").startswith(NEEDS_REVIEW)
            if marked:
                i.last_error = None
            if not (marked and i.status == IntentStatus.PAUSED):
                return
            i.status = IntentStatus.ACTIVE
            i.consecutive_failures = 0
            i.pending_trigger = None
            if i.kind == IntentKind.AT:
                i.next_run_at = None  # its one fire was the interrupted one
            else:
                i.next_run_at = first_due(i.kind, i.schedule, i.timezone, now)
            if i.next_run_at is None and i.kind != IntentKind.EVENT:
                i.status = IntentStatus.DONE

        return self._decide(run_id, "run dismissed after review", apply)
