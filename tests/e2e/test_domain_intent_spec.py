"""IntentSpec: one frozen value, validated once; each bad input is a one-line error."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from goalsui.domain.intent_spec import MAX_INSTRUCTION, MAX_TITLE, IntentSpec
from goalsui.domain.states import IntentKind
from goalsui.errors import ValidationError
from goalsui.store.models import Intent
from tests.base_kit import run_cli

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
GOOD = {"title": "Friday", "kind": "cron", "schedule": "0 16 * * 5"}

BAD = [
    ({"title": "   "}, "needs a title"),
    ({"title": "x" * (MAX_TITLE + 1)}, "title is too long"),
    ({"instruction": "x" * (MAX_INSTRUCTION + 1)}, "instruction is too long"),
    ({"checklist": "x" * (MAX_INSTRUCTION + 1)}, "checklist is too long"),
    ({"kind": "sometimes"}, "unknown intent kind"),
    ({"schedule": "99 * * * *"}, "cron"),
    ({"schedule": None}, "needs a cron expression"),
    ({"timezone": "Mars/Olympus"}, "Mars/Olympus"),
    ({"kind": "at", "schedule": "2026-12-24 18:00"}, "offset"),
    ({"kind": "at", "schedule": "next tuesday"}, "next tuesday"),
    ({"kind": "heartbeat", "schedule": "1s"}, "at least 10s"),
    ({"max_fires": 0}, "--max-fires"),
    ({"max_fires": "3"}, "--max-fires"),
    ({"expires_at": "2027-01-01 00:00"}, "offset"),
    ({"expires_at": datetime(2027, 1, 1)}, "no UTC offset"),
    ({"cooldown": "soon"}, "soon"),
    ({"kind": "event", "schedule": None}, "needs a source"),
    ({"kind": "event", "event_source": "../etc"}, "invalid event source"),
    ({"kind": "event", "event_source": "gh", "event_filter": [1]}, "JSON object"),
    ({"operation_key": "   "}, "operation key"),
    ({"operation_key": "k" * 201}, "operation key"),
    ({"goal_id": "../x"}, "invalid goal id"),
    ({"worker": "w1"}, "needs its goal"),
    ({"goal_id": "g1", "worker": "Bad Name"}, "invalid worker name"),
    ({"thread_id": "7"}, "invalid thread id"),
    ({"colour": "red"}, "unknown intent field"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_input_is_one_line_error(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        IntentSpec.parse(**{**GOOD, **change})
    text = str(err.value)
    assert message in text and "\n" not in text and len(text) < 400


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ValidationError, match="needs a title"):
        IntentSpec(title="", kind=IntentKind.CRON, schedule="0 9 * * *")
    with pytest.raises(ValidationError, match="cooldown"):
        IntentSpec(title="t", kind=IntentKind.CRON, schedule="0 9 * * *", cooldown_s=-1)


def test_normalised_once_and_frozen() -> None:
    spec = IntentSpec.parse(
        title="  Friday \n reminder ",
        kind="cron",
        schedule="0 16 * * 5",
        timezone="Europe/Berlin",
        operation_key="  friday  ",
        cooldown="5m",
        timeout="1h",
        expires_at="2027-01-01T00:00:00+01:00",
    )
    assert spec.title == "Friday reminder" and spec.kind is IntentKind.CRON
    assert (spec.operation_key, spec.cooldown_s, spec.timeout_s) == ("friday", 300, 3600)
    assert spec.expires_at == datetime(2026, 12, 31, 23, 0, tzinfo=UTC)
    assert IntentSpec.parse(**GOOD).zone == "UTC"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.title = "other"  # type: ignore[misc]  # frozen: must raise
    assert dataclasses.replace(spec, title="Other").title == "Other"  # validated again


def test_from_spec_plans_from_now_and_refuses_a_past_expiry() -> None:
    spec = IntentSpec.parse(**GOOD, timezone="Europe/Berlin")
    intent = Intent.from_spec(spec, NOW)
    assert intent.next_run_at == datetime(2026, 12, 4, 15, 0, tzinfo=UTC)  # 16:00 CET
    assert (intent.kind, intent.timezone, intent.created_at) == ("cron", "Europe/Berlin", NOW)
    late = IntentSpec.parse(**GOOD, expires_at="2026-12-01T00:00:00Z")
    with pytest.raises(ValidationError, match="expiry is in the past"):
        Intent.from_spec(late, NOW)


def test_the_service_stores_a_spec(service) -> None:
    spec = IntentSpec.parse(**GOOD, operation_key="once")
    first = service.intents.save(spec)
    assert service.intents.save(spec).id == first.id  # the key returns the same intent
    assert service.intents.get(first.id).schedule == "0 16 * * 5"
    private = service.threads.create("secret", private=True)
    with pytest.raises(ValidationError, match="private"):
        service.intents.save(dataclasses.replace(spec, operation_key=None, thread_id=private.id))


def test_cli_bad_input_exits_1_with_one_line(tmp_path, empty_kb) -> None:
    state = tmp_path / "state"
    done = run_cli(
        "intent", "add", "--title", "t", "--instruction", "i", "--cron", "0 9 * * *",
        "--cooldown", "soon", kb=empty_kb, state=state,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "soon" in done.stderr
    listed = run_cli("intent", "list", "--json", kb=empty_kb, state=state)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]"  # nothing was created
