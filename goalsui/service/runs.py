"""Runs (``service.runs``): history, live output, dismissal, replay, the alert mark, and
the operator's decision on a run awaiting review (an interrupted run of an
``on_interrupt: review`` intent, its intent paused): retry the fire, or dismiss it and
resume from now. Both refuse a run that is not awaiting review."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from sqlmodel import col, select

from goalsui.domain.interrupts import NEEDS_REVIEW
from goalsui.domain.states import (
    ATTENTION_RUNS,
    ChangeTopic,
    IntentKind,
    IntentStatus,
    RunStatus,
    RunTrigger,
)
from goalsui.domain.transitions import Action, refusal, run_actions
from goalsui.domain.triggers import first_due
from goalsui.errors import Conflict, ValidationError
from goalsui.service.context import ServiceContext, found
from goalsui.service.intents import Intents, retry_now, settle, stop_pending
from goalsui.store.models import Intent, IntentRun

MAX_LIMIT = 100_000


class Runs:
    """The runs of every intent: history, output, and the operator's actions on them."""

    def __init__(self, ctx: ServiceContext, intents: Intents) -> None:
        self.ctx = ctx
        self.intents = intents

    def get(self, run_id: int) -> IntentRun:
        """One run, or :class:`NotFound`."""
        return self.ctx.get(IntentRun, run_id, "run")

    def log_path(self, run_id: int) -> Path:
        """Where a run streams its output while it runs."""
        return self.ctx.runs_dir / f"{run_id}.log"

    def output(self, run_id: int, *, tail_bytes: int = 256 * 1024) -> str:
        """A run's output (the live log while it runs), at most the last ``tail_bytes``."""
        run = self.get(run_id)
        path = Path(run.output_path) if run.output_path else self.log_path(run_id)
        if path.is_file():
            with path.open("rb") as fh:
                fh.seek(max(0, path.stat().st_size - tail_bytes))
                data = fh.read()
            return data.decode("utf-8", errors="replace")
        return run.output_tail or ""

    def dismiss(self, run_id: int) -> IntentRun:
        """Take a run off the Failures list; one awaiting review is dismissed as a review."""
        if self.get(run_id).needs_review:
            self.review_dismiss(run_id)
            return self.get(run_id)
        return self._dismiss(run_id)

    def _dismiss(self, run_id: int) -> IntentRun:
        with self.ctx.store.write() as s:
            run = found(s.get(IntentRun, run_id), "run", run_id)
            _require(run, Action.DISMISS)
            run.dismissed = True
            s.add(run)
        self.ctx.done(ChangeTopic.RUNS, "run dismissed", f"run {run_id}")
        return run

    def replay(self, run_id: int) -> Intent:
        """Fire a missed (or failed) occurrence again now, and dismiss the run."""
        run = self.get(run_id)
        _require(run, Action.RETRY)
        trigger = RunTrigger.CATCH_UP if run.status == RunStatus.MISSED else RunTrigger.RETRY
        result = self.intents.run_now(run.intent_id, trigger=trigger)
        self._dismiss(run_id)
        return result

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

    def review_retry(self, run_id: int) -> Intent:
        """Start the interrupted fire again now and resume the intent."""
        return self._decide(run_id, "run retried after review", retry_now)

    def review_dismiss(self, run_id: int) -> Intent:
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
            # an ``at`` intent's one fire was the interrupted one
            at = i.kind == IntentKind.AT
            i.next_run_at = None if at else first_due(i.kind, i.schedule, i.timezone, now)
            if i.next_run_at is None and i.kind != IntentKind.EVENT:
                i.status = IntentStatus.DONE

        return self._decide(run_id, "run dismissed after review", apply)

    def stop(self, run_id: int) -> IntentRun:
        """Ask the scheduler running ``run_id`` to stop it (SIGTERM, then SIGKILL); only
        the run is cancelled, its intent keeps its schedule."""
        with self.ctx.store.write() as s:
            run = found(s.get(IntentRun, run_id), "run", run_id)
            _require(run, Action.STOP_RUN)
            intent = s.get(Intent, run.intent_id)
            if intent is None or intent.status != IntentStatus.FIRING:
                raise Conflict(f"run {run_id} is finishing; there is nothing left to stop")
            intent.pending_trigger = stop_pending(intent.pending_trigger)
            intent.updated_at = self.ctx.now()
            s.add(intent)
            title = intent.title
        self.ctx.done(ChangeTopic.INTENTS, "run stop requested", f"run {run_id}", title)
        return run

    def running(self) -> list[IntentRun]:
        """Every run still running (on any scheduler)."""
        with self.ctx.store.read() as s:
            return list(s.exec(select(IntentRun).where(IntentRun.status == RunStatus.RUNNING)))

    def mark_alerted(
        self, intent_id: int, at: datetime, *, cooldown: timedelta | None = None
    ) -> bool:
        """Record an alert at ``at`` unless one was raised within ``cooldown``; a
        compare-and-set, so of several schedulers exactly one gets True."""
        with self.ctx.store.write() as s:
            intent = found(s.get(Intent, intent_id, with_for_update=True), "intent", intent_id)
            last = intent.last_alert_at
            if cooldown is not None and last is not None and last + cooldown > at:
                return False
            intent.last_alert_at = at
            s.add(intent)
        return True

    def list(
        self,
        *,
        failed: bool = False,
        intent_id: int | None = None,
        limit: int = 50,
        since: datetime | None = None,
    ) -> list[IntentRun]:
        """Runs, newest first; ``failed``: those that need attention (not dismissed)."""
        if limit < 1 or limit > MAX_LIMIT:
            raise ValidationError(f"--limit must be between 1 and {MAX_LIMIT}")
        with self.ctx.store.read() as s:
            q = select(IntentRun)
            if failed:
                attention = col(IntentRun.status).in_([str(x) for x in ATTENTION_RUNS])
                q = q.where(attention, IntentRun.dismissed == False)  # noqa: E712
            if intent_id is not None:
                q = q.where(IntentRun.intent_id == intent_id)
            if since is not None:
                q = q.where(col(IntentRun.started_at) >= since)
            newest = q.order_by(col(IntentRun.started_at).desc(), col(IntentRun.id).desc())
            return list(s.exec(newest.limit(limit)))


def _require(run: IntentRun, action: Action) -> None:
    """Raise :class:`Conflict` unless the run's state allows ``action``."""
    allowed = run_actions(run.status)
    if action not in allowed:
        raise Conflict(refusal(f"run {run.id}", run.status, action, allowed))
