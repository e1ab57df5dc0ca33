"""Intent tools: schedule_intent (idempotent in the session's scope), cancel_intent,
list_intents (paged)."""

from __future__ import annotations

from typing import Annotated, Literal, cast

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.domain.durations import parse_duration
from goalsui.domain.timeutil import parse_instant
from goalsui.domain.views import json_fields
from goalsui.mcp.scope import Scope
from goalsui.mcp.tools import Cursor, Paged, ToolContext, ToolFailure, page
from goalsui.store.models import Intent

KINDS = {"at": "at", "cron": "cron", "every": "heartbeat", "event": "event"}


class IntentInfo(TypedDict):
    """An intent: a scheduled wake-up (times ISO 8601 UTC)."""

    id: int
    title: str
    kind: str
    status: str
    schedule: str | None
    timezone: str | None
    event_source: str | None
    next_run_at: str | None
    thread_id: int | None
    goal_id: str | None
    worker: str | None


class Scheduled(TypedDict):
    """created false: the same call was made before and this is its intent."""

    created: bool
    intent: IntentInfo


class OneIntent(TypedDict):
    intent: IntentInfo


class IntentList(Paged):
    """The session's intents, oldest first, paged."""

    intents: list[IntentInfo]


def intent_json(i: Intent) -> IntentInfo:
    """The intent's fields that :class:`IntentInfo` names (times ISO 8601 to the second)."""
    return cast(IntentInfo, json_fields(i, " ".join(IntentInfo.__annotations__)))


def in_scope(scope: Scope, intent: Intent) -> bool:
    """True for an intent of the session's thread or goal."""
    if scope.thread_id is not None and intent.thread_id == scope.thread_id:
        return True
    return scope.goal_id is not None and intent.goal_id == scope.goal_id


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool(
        "Schedule a follow-up",
        "Schedule a follow-up that comes back into this session's thread (else its goal) "
        "with the instruction, labelled 'Came back about: <title>'. When you promise to "
        "come back to something, call this before you end. kind 'at': 'in' (a duration "
        "from now: 30m, 2h, 1d) or 'schedule' (an ISO 8601 instant with offset, e.g. "
        "2026-12-01T18:00:00+01:00; must be in the future); 'cron': 'schedule' is a 5-field "
        "cron expression with 'timezone'; 'every': 'schedule' is an interval (30m, 2h); "
        "'event': 'event_source'. Idempotent: in a run, repeating the same call returns "
        "the same intent (created false), also across retries of the run; in an operator's "
        "session, an identical call returns the intent while it has not ended. 'key' names "
        "the operation yourself, inside this session's thread or goal: the same key with "
        "another payload is refused.",
        read_only=False,
        idempotent=True,
    )
    def schedule_intent(
        title: Annotated[
            str, Field(description="Short title; shown as 'Came back about: <title>'.")
        ],
        instruction: Annotated[
            str, Field(description="What to do when it comes back: the next turn's instruction.")
        ],
        kind: Annotated[
            Literal["at", "cron", "every", "event"],
            Field(description="at: once; cron: on a calendar; every: at an interval; event."),
        ],
        schedule: Annotated[
            str | None,
            Field(
                description="at: ISO 8601 instant with offset (future); cron: 5-field "
                "expression like '0 9 * * 1-5'; every: duration like '30m', '2h'."
            ),
        ] = None,
        in_: Annotated[
            str | None,
            Field(
                alias="in",
                description="kind 'at' only: a duration from now instead of 'schedule' "
                "('90s', '30m', '2h', '1d', '1h30m').",
            ),
        ] = None,
        timezone: Annotated[
            str | None,
            Field(description="IANA zone for a cron schedule, e.g. 'Europe/Berlin' (UTC)."),
        ] = None,
        event_source: Annotated[
            str | None, Field(description="kind 'event': the event source it waits for.")
        ] = None,
        key: Annotated[
            str | None,
            Field(
                description="Your idempotency key (1-80 characters: letters, digits, ._:/@+-), "
                "scoped to this session's thread or goal."
            ),
        ] = None,
        max_fires: Annotated[
            int | None, Field(description="Repeating kinds: end after this many fires (>= 1).")
        ] = None,
    ) -> Scheduled:
        if scope.thread_id is None and scope.goal_id is None:
            raise ToolFailure("this session has no thread or goal to schedule into")
        if kind == "event" and (schedule or in_):
            raise ToolFailure("an 'event' intent takes event_source, not schedule")
        given = schedule
        if in_ is not None:
            if kind != "at":
                raise ToolFailure("'in' is for kind 'at' (for an interval use kind 'every')")
            if schedule:
                raise ToolFailure("give 'in' or 'schedule', not both")
            given = f"in:{in_.strip()}"
            schedule = (svc.now() + parse_duration(in_)).isoformat(timespec="seconds")
        elif kind == "at" and schedule and parse_instant(schedule) <= svc.now():
            raise ToolFailure(
                f"at {schedule} is in the past (now is "
                f"{svc.now().isoformat(timespec='seconds')}): give a future instant, "
                "or 'in' with a duration"
            )
        intent, created = svc.agents.schedule_follow_up(
            scope.run_id,
            key=key,
            schedule_as_given=given,
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

    @ctx.tool(
        "Cancel an intent",
        "End an intent of this session's thread or goal; it never fires again. A worker's "
        "own schedule is not cancelled here (update_worker changes it). Cancelling an "
        "ended intent changes nothing.",
        read_only=False,
        destructive=True,
        idempotent=True,
    )
    def cancel_intent(
        intent_id: Annotated[int, Field(description="The intent's id (list_intents).")],
    ) -> OneIntent:
        intent = svc.intents.get(intent_id)
        if not in_scope(scope, intent):
            raise ToolFailure(f"intent {intent_id} is outside this session's thread and goal")
        if intent.worker and intent.operation_key and intent.operation_key.startswith("worker:"):
            raise ToolFailure(
                f"intent {intent_id} is worker '{intent.worker}''s schedule: change it with "
                "update_worker"
            )
        return {"intent": intent_json(svc.intents.cancel(intent_id))}

    @ctx.tool(
        "List intents",
        "The intents of this session's thread and goal (workers' schedules included), "
        "oldest first, paged: pass next_cursor back as cursor while truncated is true. "
        "Without a scope: the named goal's or thread's.",
        read_only=True,
    )
    def list_intents(
        include_ended: Annotated[
            bool, Field(description="Also intents that are done or cancelled.")
        ] = False,
        goal_id: Annotated[
            str | None,
            Field(description="Unscoped sessions only: the goal whose intents to list."),
        ] = None,
        thread_id: Annotated[
            int | None,
            Field(description="Unscoped sessions only: the thread whose intents to list."),
        ] = None,
        cursor: Cursor = None,
        limit: Annotated[int, Field(description="Intents per page, 1 to 1000.")] = 100,
    ) -> IntentList:
        if scope.thread_id is not None or scope.goal_id is not None:
            if (goal_id and goal_id != scope.goal_id) or (
                thread_id is not None and thread_id != scope.thread_id
            ):
                raise ToolFailure("that goal or thread is outside this session's scope")
            rows = [i for i in svc.intents.list(include_ended=include_ended) if in_scope(scope, i)]
        else:  # a service error becomes the tool's one-line error
            rows = svc.intents.list(
                include_ended=include_ended, goal_id=goal_id, thread_id=thread_id
            )
        chunk, paging = page(rows, cursor, limit)
        return {"intents": [intent_json(i) for i in chunk], **paging}
