"""The stable JSON shapes of the command-line contract, from the records it prints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from goalsui.domain.records import EventRecord, IntentRecord, RunRecord, ThreadRecord, TodoRecord


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat(timespec="seconds") if dt else None


def intent_json(i: IntentRecord) -> dict[str, Any]:
    return {
        "id": i.id,
        "title": i.title,
        "kind": i.kind,
        "status": i.status,
        "thread_id": i.thread_id,
        "goal_id": i.goal_id,
        "worker": i.worker,
        "schedule": i.schedule,
        "timezone": i.timezone,
        "next_run_at": _iso(i.next_run_at),
        "operation_key": i.operation_key,
        "attempts": i.attempts,
        "consecutive_failures": i.consecutive_failures,
        "last_error": i.last_error,
    }


def run_json(r: RunRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "intent_id": r.intent_id,
        "attempt": r.attempt,
        "trigger": r.trigger,
        "status": r.status,
        "needs_review": bool(r.needs_review),
        "reason": r.reason,
        "started_at": _iso(r.started_at),
        "finished_at": _iso(r.finished_at),
        "exit_code": r.exit_code,
        "duration_s": (
            round((r.finished_at - r.started_at).total_seconds(), 3) if r.finished_at else None
        ),
        # None (null) means the agent did not report it: unknown, never zero
        "usage": {
            "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out,
            "cost_usd": r.cost_usd,
            "model": r.model,
        },
    }


def todo_json(t: TodoRecord) -> dict[str, Any]:
    return {"id": t.id, "text": t.text, "done": t.done, "position": t.position}


def thread_json(t: ThreadRecord) -> dict[str, Any]:
    return {
        "id": t.id,
        "title": t.title,
        "private": t.private,
        "revision": t.revision,
        "created_at": _iso(t.created_at),
    }


def event_json(e: EventRecord) -> dict[str, Any]:
    return {
        "id": e.id,
        "source": e.source,
        "delivery_id": e.delivery_id,
        "received_at": _iso(e.received_at),
        "matched_intent_ids": list(e.matched_intent_ids or []),
    }
