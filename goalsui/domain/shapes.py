"""The stable JSON shapes of the command-line contract, from the records it prints."""

from __future__ import annotations

from typing import Any

from goalsui.domain.records import EventRecord, IntentRecord, RunRecord, ThreadRecord, TodoRecord
from goalsui.domain.views import json_fields


def intent_json(i: IntentRecord) -> dict[str, Any]:
    return json_fields(
        i,
        "id title kind status thread_id goal_id worker schedule timezone next_run_at"
        " operation_key attempts consecutive_failures last_error",
    )


def run_json(r: RunRecord) -> dict[str, Any]:
    took = (r.finished_at - r.started_at).total_seconds() if r.finished_at else None
    return {
        **json_fields(r, "id intent_id attempt trigger status"),
        "needs_review": bool(r.needs_review),
        **json_fields(r, "reason started_at finished_at exit_code"),
        "duration_s": round(took, 3) if took is not None else None,
        # None (null) means the agent did not report it: unknown, never zero
        "usage": json_fields(r, "tokens_in tokens_out cost_usd model"),
    }


def todo_json(t: TodoRecord) -> dict[str, Any]:
    return json_fields(t, "id text done position")


def thread_json(t: ThreadRecord) -> dict[str, Any]:
    return json_fields(t, "id title private revision created_at")


def event_json(e: EventRecord) -> dict[str, Any]:
    ids = list(e.matched_intent_ids or [])
    return {**json_fields(e, "id source delivery_id received_at"), "matched_intent_ids": ids}
