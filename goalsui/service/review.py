"""Runs that wait for review: an interrupted run of an ``on_interrupt: review`` intent.

Recovery (:mod:`goalsui.store.claims.recovery`) and the outcome writer mark such a run
``needs_review`` and pause its intent with a ``needs review: ...`` last error instead of
retrying it. The operator then decides:

- :func:`retry_run`: fire the intent again now (trigger ``retry``, so the same fire),
  clear the mark and take the run off the Failures list;
- :func:`dismiss_run`: clear the mark and take the run off the list, and resume the
  schedule from now without running the interrupted fire again (a one-shot ``at``
  intent is then done).

Both refuse, in one line, a run that is not awaiting review.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlmodel import Session, col, select

from goalsui.domain.interrupts import NEEDS_REVIEW
from goalsui.domain.states import ChangeTopic, IntentKind, IntentStatus, RunTrigger
from goalsui.domain.transitions import Action
from goalsui.domain.triggers import first_due
from goalsui.errors import Conflict, NotFound
from goalsui.service import intents, runs
from goalsui.service.context import ServiceContext
from goalsui.store.models import Intent, IntentRun

__all__ = [
    "awaiting_review",
    "dismiss_failure",
    "dismiss_run",
    "resume_intent",
    "retry_intent",
    "retry_run",
    "settle_intent",
]


def awaiting_review(ctx: ServiceContext, *, limit: int = 1000) -> list[IntentRun]:
    """Runs waiting for the operator's decision, newest first."""
    with ctx.store.read() as s:
        q = select(IntentRun).where(IntentRun.needs_review == True)  # noqa: E712
        q = q.order_by(col(IntentRun.started_at).desc(), col(IntentRun.id).desc())
        return list(s.exec(q.limit(limit)))


def _settle(run: IntentRun) -> None:
    run.needs_review = False
    run.dismissed = True


def _clear_error(intent: Intent) -> None:
    if (intent.last_error or "").startswith(NEEDS_REVIEW):
        intent.last_error = None


def _decide(
    ctx: ServiceContext,
    run_id: int,
    action: str,
    apply: Callable[[Session, IntentRun, Intent, datetime], None],
) -> tuple[IntentRun, Intent]:
    """Apply the operator's decision to a run awaiting review and its intent, at once."""
    now = ctx.now()
    with ctx.store.write() as s:
        run = s.get(IntentRun, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        if not run.needs_review:
            raise Conflict(f"run {run_id} is not awaiting review (status {run.status})")
        intent = s.get(Intent, run.intent_id, with_for_update=True)
        if intent is None:
            raise NotFound(f"no intent {run.intent_id}")
        apply(s, run, intent, now)
        _settle(run)
        intent.updated_at = now
        s.add(run)
        s.add(intent)
    ctx.journal(action, f"run {run_id}", f"intent {intent.id}: {intent.title}")
    ctx.changed(ChangeTopic.RUNS)
    ctx.changed(ChangeTopic.INTENTS)
    return run, intent


def retry_run(ctx: ServiceContext, run_id: int) -> Intent:
    """Start the interrupted fire again now and resume the intent."""

    def apply(s: Session, run: IntentRun, i: Intent, now: datetime) -> None:
        intents.require(i, Action.RETRY)
        _clear_error(i)
        i.status = IntentStatus.ACTIVE
        i.consecutive_failures = 0
        i.next_run_at = now
        i.pending_trigger = str(RunTrigger.RETRY)

    return _decide(ctx, run_id, "run retried after review", apply)[1]


def dismiss_run(ctx: ServiceContext, run_id: int) -> Intent:
    """Leave the interrupted fire be and resume the intent's schedule from now.

    An intent that is no longer held for this review (resumed, ended or running again
    since) keeps its state: only the run's mark is cleared.
    """

    def apply(s: Session, run: IntentRun, i: Intent, now: datetime) -> None:
        held = i.status == IntentStatus.PAUSED and (i.last_error or "").startswith(NEEDS_REVIEW)
        _clear_error(i)
        if not held:
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

    return _decide(ctx, run_id, "run dismissed after review", apply)[1]


def settle_intent(ctx: ServiceContext, intent_id: int) -> int:
    """Clear the review marks of an intent's runs (the operator retried or resumed the
    intent itself); returns how many runs were waiting."""
    with ctx.store.write() as s:
        runs = list(
            s.exec(
                select(IntentRun).where(
                    IntentRun.intent_id == intent_id,
                    IntentRun.needs_review == True,  # noqa: E712
                )
            )
        )
        for run in runs:
            _settle(run)
            s.add(run)
    if runs:
        ctx.journal("review settled", f"intent {intent_id}", f"{len(runs)} run(s)")
        ctx.changed(ChangeTopic.RUNS)
    return len(runs)


def resume_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """Resume an intent (:func:`goalsui.service.intents.resume_intent`); its runs
    awaiting review are settled."""
    intent = intents.resume_intent(ctx, intent_id)
    settle_intent(ctx, intent_id)
    return intent


def retry_intent(ctx: ServiceContext, intent_id: int) -> Intent:
    """Retry an intent (:func:`goalsui.service.intents.retry_intent`); its runs
    awaiting review are settled."""
    intent = intents.retry_intent(ctx, intent_id)
    settle_intent(ctx, intent_id)
    return intent


def dismiss_failure(ctx: ServiceContext, run_id: int) -> IntentRun:
    """Take a run off the Failures list; a run awaiting review is dismissed as a
    review (its intent's schedule resumes from now)."""
    if runs.get_run(ctx, run_id).needs_review:
        dismiss_run(ctx, run_id)
        return runs.get_run(ctx, run_id)
    return runs.dismiss_run(ctx, run_id)
