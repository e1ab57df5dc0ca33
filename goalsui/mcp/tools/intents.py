"""Intent tools: schedule_intent (idempotent per run), cancel_intent, list_intents."""

from __future__ import annotations

from typing import Any, Literal

from goalsui.domain.models import Intent
from goalsui.mcp.scope import Scope
from goalsui.mcp.tools import ToolContext, ToolFailure

KINDS = {"at": "at", "cron": "cron", "every": "heartbeat", "event": "event"}


def intent_json(i: Intent) -> dict[str, Any]:
    return {
        "id": i.id,
        "title": i.title,
        "kind": i.kind,
        "status": i.status,
        "schedule": i.schedule,
        "timezone": i.timezone,
        "event_source": i.event_source,
        "next_run_at": i.next_run_at.isoformat(timespec="seconds") if i.next_run_at else None,
        "thread_id": i.thread_id,
        "goal_id": i.goal_id,
        "worker": i.worker,
    }


def in_scope(scope: Scope, intent: Intent) -> bool:
    """True for an intent of the session's thread or goal."""
    if scope.thread_id is not None and intent.thread_id == scope.thread_id:
        return True
    return scope.goal_id is not None and intent.goal_id == scope.goal_id


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool(
        "Schedule a follow-up into this turn's thread (or goal): kind 'at' (schedule: ISO "
        "instant with offset), 'cron' (expression; timezone), 'every' (interval like 2h) or "
        "'event' (event_source). Repeating the same call returns the same intent "
        "(created: false); 'key' names the operation yourself."
    )
    def schedule_intent(
        title: str,
        instruction: str,
        kind: Literal["at", "cron", "every", "event"],
        schedule: str | None = None,
        timezone: str | None = None,
        event_source: str | None = None,
        key: str | None = None,
        max_fires: int | None = None,
    ) -> dict[str, Any]:
        if scope.thread_id is None and scope.goal_id is None:
            raise ToolFailure("this session has no thread or goal to schedule into")
        if kind == "event" and schedule:
            raise ToolFailure("an 'event' intent takes event_source, not schedule")
        intent, created = svc.agents.schedule_follow_up(
            scope.run_id,
            key=key,
            title=title,
            instruction=instruction,
            kind=KINDS[kind],
            schedule=schedule,
            timezone=timezone,
            thread_id=scope.thread_id,
            goal_id=scope.goal_id,
            event_source=event_source,
            max_fires=max_fires,
        )
        return {"created": created, "intent": intent_json(intent)}

    @ctx.tool("Cancel an intent of this turn's thread or goal (not a worker's own schedule).")
    def cancel_intent(intent_id: int) -> dict[str, Any]:
        intent = svc.get_intent(intent_id)
        if not in_scope(scope, intent):
            raise ToolFailure(f"intent {intent_id} is outside this session's thread and goal")
        if intent.worker and intent.operation_key and intent.operation_key.startswith("worker:"):
            raise ToolFailure(
                f"intent {intent_id} is worker '{intent.worker}''s schedule: change it with "
                "update_worker"
            )
        return {"intent": intent_json(svc.cancel_intent(intent_id))}

    @ctx.tool("The intents of this turn's thread and goal (all intents without a scope).")
    def list_intents(include_ended: bool = False) -> dict[str, Any]:
        rows = svc.list_intents(include_ended=include_ended)
        if scope.thread_id is not None or scope.goal_id is not None:
            rows = [i for i in rows if in_scope(scope, i)]
        return {"intents": [intent_json(i) for i in rows[-200:]]}
