"""Events (``service.events``): stored once per delivery; matching event intents become due."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from goalsui.domain.matching import filter_matches
from goalsui.domain.names import check_name
from goalsui.domain.records import EventRecord, saved_id
from goalsui.domain.states import ChangeTopic, IntentKind, IntentStatus, RunTrigger
from goalsui.domain.views import EmitResult
from goalsui.errors import ValidationError
from goalsui.service.context import Aggregate
from goalsui.store.models import Event, Intent, skipped_run

MAX_DELIVERY_ID = 200


class Events(Aggregate):
    """The events received (webhooks, ``goalsui event emit``)."""

    def emit(self, source: str, payload: Any, delivery_id: str) -> EmitResult:
        """Store an event once per ``(source, delivery_id)``, making matching intents due
        (a repeated delivery fires nothing)."""
        check_name(source, "event source")
        delivery_id = str(delivery_id).strip()
        printable = all(ord(c) >= 32 for c in delivery_id)
        if not (0 < len(delivery_id) <= MAX_DELIVERY_ID and printable):
            raise ValidationError(f"a delivery id must be 1-{MAX_DELIVERY_ID} printable characters")
        now = self.ctx.now()
        try:
            with self.ctx.store.write() as s:
                dup = _delivered(s, source, delivery_id)
                if dup is not None:
                    return EmitResult(saved_id(dup), [], duplicate=True)
                event = Event(
                    source=source, delivery_id=delivery_id, payload=payload, received_at=now
                )
                s.add(event)
                s.flush()
                fired = _fire_matching(s, event, now)
                event.matched_intent_ids = fired
                s.add(event)
        except IntegrityError:
            # The same delivery stored by another process at the same moment.
            with self.ctx.store.read() as s:
                dup = _delivered(s, source, delivery_id)
            if dup is None:
                raise
            return EmitResult(saved_id(dup), [], duplicate=True)
        self.ctx.journal.record(
            "event received",
            f"{source}/{delivery_id}",
            f"fired intents {fired}" if fired else "fired nothing",
            actor="hooks" if self.ctx.actor != "cli" else "cli",
        )
        self.ctx.changed(ChangeTopic.INTENTS)
        return EmitResult(saved_id(event), fired, duplicate=False)

    def list(self, limit: int = 100) -> list[EventRecord]:
        """The newest ``limit`` events, newest first."""
        with self.ctx.store.read() as s:
            rows = s.exec(select(Event).order_by(col(Event.id).desc()).limit(limit))
            return [e.record() for e in rows]


def _delivered(s: Session, source: str, delivery_id: str) -> Event | None:
    """The event already stored for this delivery, if any."""
    return s.exec(
        select(Event).where(Event.source == source, Event.delivery_id == delivery_id)
    ).first()


def _fire_matching(s: Session, event: Event, now: datetime) -> list[int]:
    """Make matching event intents due now (expired end, cooling wait, running skip)."""
    fired: list[int] = []
    # Row-locked on PostgreSQL: this update must see a row as a claim in flight left it
    # (firing: an overlap), not overwrite a firing row with an active one's due time.
    candidates = s.exec(
        select(Intent)
        .where(
            Intent.kind == IntentKind.EVENT,
            Intent.event_source == event.source,
            col(Intent.status).in_([IntentStatus.ACTIVE, IntentStatus.FIRING]),
        )
        .order_by(col(Intent.id))
        .with_for_update()
    ).all()
    for intent in candidates:
        assert intent.id is not None  # a stored row
        if not filter_matches(intent.event_filter, event.payload):
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
            s.add(skipped_run(intent.id, intent.attempts, RunTrigger.EVENT, now, event_id=event.id))
            continue
        intent.next_run_at = now
        intent.pending_trigger = str(RunTrigger.EVENT)
        intent.pending_event_id = event.id
        intent.last_fired_at = now
        intent.updated_at = now
        s.add(intent)
        fired.append(intent.id)
    return fired
