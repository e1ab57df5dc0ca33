"""The journal lines of recorded outcomes: each one, or one line for a big batch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from goalsui.scheduler.rules import Rules
from goalsui.store.claims import JOURNAL_DETAIL_LIMIT, Completion
from goalsui.store.claims.planner import journal_rows, plan_completions

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _finished(n: int) -> list[dict[str, Any]]:
    rows = {
        i: {"id": i, "title": f"t{i}", "kind": "at", "status": "firing", "schedule": None,
            "timezone": "UTC", "next_run_at": None, "fires": 1, "attempts": 1,
            "lease_owner": "me", "pending_trigger": None}
        for i in range(1, n + 1)
    }  # fmt: skip
    items = [Completion(run_id=10 + i, intent_id=i, status="ok") for i in rows]
    rules = Rules()
    plan = plan_completions(
        rows, items, lambda r, c: rules.decide_after(r, c, NOW), owner="me", now=NOW, open_ids=()
    )
    return [r for r in journal_rows(NOW, plan.journal) if r["action"] == "run finished"]


def test_each_outcome_of_a_small_batch_gets_its_line() -> None:
    lines = _finished(JOURNAL_DETAIL_LIMIT)
    assert [(r["subject"], r["detail"]) for r in lines[:2]] == [
        ("intent 1", "run 11: ok"),
        ("intent 2", "run 12: ok"),
    ]
    assert len(lines) == JOURNAL_DETAIL_LIMIT


def test_a_big_batch_gets_one_line_that_quotes_its_first_three() -> None:
    (line,) = _finished(JOURNAL_DETAIL_LIMIT + 5)
    assert line["subject"] == f"{JOURNAL_DETAIL_LIMIT + 5} intents"
    assert line["detail"] == (
        f"{JOURNAL_DETAIL_LIMIT + 5} x run finished in one batch, e.g. intent 1: run 11: ok; "
        "intent 2: run 12: ok; intent 3: run 13: ok; ..."
    )
