"""Contract (PostgreSQL): an event that arrives while a scheduler is claiming its intent.

Found by ``goalsui bench chaos``: the hook's transaction read the intent ``active``
without a row lock while another daemon's claim held it; once the claim committed
(``firing``, no next due time), the hook's update still set ``next_run_at``, the
pending trigger and the event on the firing row. The owner then recorded the event as
an overlap of a *schedule* occurrence, with no event id. The hook must wait for the
claim and see the intent firing: an overlap run of that event, the row left as the
claim made it. (SQLite serialises writers, so only PostgreSQL can interleave them.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.domain.views import EmitResult
from goalsui.service import Service

pytestmark = pytest.mark.postgres


def test_an_event_during_a_claim_is_an_overlap_of_that_event(
    pg_db: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    svc = make_service(empty_kb, pg_db)
    hook = make_service(empty_kb, pg_db)  # the hook listener's own engine
    intent = svc.intents.create(title="on push", kind="event", instruction="x", event_source="ci")
    first = svc.events.emit("ci", {"n": 1}, "d-1")
    assert first.fired == [intent.id]

    engine = svc.store.engine
    with engine.connect() as claim:
        tx = claim.begin()
        # The claim: the due row locked, then set firing under our lease (not committed yet).
        locked = claim.execute(
            text("SELECT id FROM intent WHERE id = :i FOR UPDATE SKIP LOCKED"), {"i": intent.id}
        ).all()
        assert locked
        claim.execute(
            text(
                "UPDATE intent SET status = 'firing', lease_owner = 'other:1:x', "
                "next_run_at = NULL, pending_trigger = NULL, pending_event_id = NULL "
                "WHERE id = :i"
            ),
            {"i": intent.id},
        )
        result: list[EmitResult] = []
        emitting = threading.Thread(
            target=lambda: result.append(hook.events.emit("ci", {"n": 2}, "d-2")), daemon=True
        )
        emitting.start()
        time.sleep(0.5)  # the hook is now waiting for the claim (or has read a stale row)
        tx.commit()
        emitting.join(30)
    assert not emitting.is_alive()
    second = result[0]
    assert second.fired == []

    after = svc.intents.get(int(intent.id))
    assert after.status == IntentStatus.FIRING
    assert (after.next_run_at, after.pending_trigger, after.pending_event_id) == (None, None, None)
    runs = svc.runs.list(intent_id=int(intent.id))
    overlaps = [r for r in runs if r.status == RunStatus.SKIPPED]
    assert [(r.reason, r.trigger, r.event_id) for r in overlaps] == [
        ("overlap", "event", second.event_id)
    ]
