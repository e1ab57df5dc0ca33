"""Which operator actions each intent and run state allows, and the service's guards."""

from __future__ import annotations

import pytest

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.domain.transitions import (
    INTENT_ACTIONS,
    RUN_ACTIONS,
    Action,
    intent_actions,
    intent_allows,
    refusal,
    run_allows,
)
from goalsui.errors import Conflict


def test_every_state_has_a_row() -> None:
    assert set(INTENT_ACTIONS) == set(IntentStatus)
    assert set(RUN_ACTIONS) == set(RunStatus)
    assert intent_actions("no-such-state") == frozenset()


@pytest.mark.parametrize(
    ("status", "action", "allowed"),
    [
        (IntentStatus.ACTIVE, Action.PAUSE, True),
        (IntentStatus.ACTIVE, Action.RESUME, False),
        (IntentStatus.PAUSED, Action.RESUME, True),
        (IntentStatus.PAUSED, Action.RUN_NOW, False),
        (IntentStatus.FAILED, Action.RETRY, True),
        (IntentStatus.FIRING, Action.STOP_RUN, True),
        (IntentStatus.FIRING, Action.RESUME, False),
        (IntentStatus.CANCELLED, Action.REINSTATE, True),  # an ended schedule comes back
        (IntentStatus.CANCELLED, Action.RUN_NOW, False),
        (IntentStatus.DONE, Action.RESUME, False),
        (IntentStatus.DONE, Action.END_SCHEDULE, False),
    ],
)
def test_intent_table(status: IntentStatus, action: Action, allowed: bool) -> None:
    assert intent_allows(status, action) is allowed
    assert intent_allows(str(status), action) is allowed  # plain strings from the records


def test_a_pending_pause_can_be_taken_back() -> None:
    assert Action.RESUME in intent_actions(IntentStatus.FIRING, pause_pending=True)
    assert Action.RESUME not in intent_actions(IntentStatus.ACTIVE, pause_pending=True)


def test_runs() -> None:
    assert run_allows(RunStatus.RUNNING, Action.STOP_RUN)
    assert not run_allows(RunStatus.RUNNING, Action.DISMISS)
    assert run_allows(RunStatus.MISSED, Action.RETRY) and run_allows(RunStatus.OK, Action.DISMISS)
    assert not run_allows(RunStatus.OK, Action.RETRY)


def test_refusals_never_send_in_a_circle() -> None:
    done = refusal("intent 3", "done", Action.RUN_NOW, intent_actions(IntentStatus.DONE))
    assert done == "intent 3 is done; it cannot be run now"
    paused = refusal("intent 3", "paused", Action.RUN_NOW, intent_actions(IntentStatus.PAUSED))
    assert paused.endswith("resume it first")
    ended = intent_actions(IntentStatus.CANCELLED)
    assert "resume it first" in refusal("intent 3", "cancelled", Action.PAUSE, ended)


def test_service_guards_follow_the_table(service, clock) -> None:
    at = service.intents.create(title="once", kind="at", schedule="2026-12-01T00:00:00Z")
    with service.store.write() as s:
        row = s.get(type(at), at.id)
        row.status = "done"
        s.add(row)
    with pytest.raises(Conflict) as err:
        service.intents.run_now(at.id)
    assert "cannot be run now" in str(err.value) and "resume" not in str(err.value)
    with pytest.raises(Conflict, match="cannot be resumed"):
        service.intents.resume(at.id)
    assert service.intents.cancel(at.id).status == "done"  # already ended: unchanged
    cron = service.intents.create(title="daily", kind="cron", schedule="0 9 * * *")
    service.intents.cancel(cron.id)
    with pytest.raises(Conflict, match="resume it first"):
        service.intents.retry(cron.id)
    back = service.intents.resume(cron.id)
    assert back.status == "active" and back.next_run_at is not None and back.last_error is None
    assert [j.action for j in service.journal.recent(3)][:2] == [
        "intent resumed",
        "intent cancelled",
    ]


def test_a_worker_removed_from_the_kb_is_not_reinstated(service) -> None:
    goal = service.goals.list()[0]
    worker = goal.workers[0]
    with service.store.write() as s:
        from goalsui.store.models import Intent

        row = s.get(Intent, worker.intent_id)
        row.status, row.last_error = "cancelled", "worker removed from the KB"
        s.add(row)
    with pytest.raises(Conflict, match="restore its files"):
        service.intents.resume(worker.intent_id)
