"""records.build makes the same detached instances as the model constructors, only faster."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from goalsui.scheduler.records import build
from goalsui.store.models import Intent, IntentRun
from goalsui.store.tables import table_of


def intent_row() -> dict:
    row: dict[str, Any] = {c.name: None for c in table_of(Intent).c}
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    row.update(
        id=7,
        title="t",
        instruction="do",
        kind="cron",
        status="firing",
        schedule="* * * * *",
        timezone="UTC",
        cooldown_s=0,
        fires=1,
        attempts=2,
        consecutive_failures=0,
        created_at=now,
        updated_at=now,
        next_run_at=now,
        runner={"command": ["true"]},
    )
    return row


def test_build_matches_the_constructor_and_behaves_like_a_model():
    row = intent_row()
    fast, slow = build(Intent, row), Intent(**row)
    assert fast.model_dump() == slow.model_dump()
    assert fast.runner == {"command": ["true"]} and fast.next_run_at == row["next_run_at"]
    assert "_sa_instance_state" not in fast.__dict__  # reads never make the ORM state ...
    fast.title = "changed"
    assert "_sa_instance_state" in fast.__dict__  # ... a change does, on first need
    assert "_sa_instance_state" in slow.__dict__  # (an instance made the usual way has its own)
    assert fast.title == "changed" and row["title"] == "t"
    assert "Intent(" in repr(fast)


def test_build_fills_defaults_and_can_be_stored(service):
    run = build(
        IntentRun,
        {
            "intent_id": 1,
            "trigger": "schedule",
            "status": "ok",
            "started_at": datetime(2026, 12, 2, tzinfo=UTC),
        },
    )
    assert (run.id, run.attempt, run.dismissed, run.reason) == (None, 1, False, None)
    intent = build(Intent, {**intent_row(), "id": None, "operation_key": "records-test"})
    with service.store.write() as s:
        s.add(intent)
        s.flush()
        run.intent_id = intent.id
        s.add(run)
    assert service.intents.get(intent.id).title == "t"
    assert service.runs.get(run.id).status == "ok"
