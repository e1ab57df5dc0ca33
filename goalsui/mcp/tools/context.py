"""get_context: who, where and when this session is (served to every session)."""

from __future__ import annotations

from typing_extensions import TypedDict

from goalsui.mcp.instructions import session_context
from goalsui.mcp.tools import ToolContext


class Limits(TypedDict, total=False):
    """The bounds the tools enforce (bytes, characters, entries)."""

    goal_kb_read_default_bytes: int
    file_max_bytes: int
    list_page_default: int
    list_page_max: int
    message_max_chars: int
    todo_max_chars: int
    log_entry_max_chars: int
    state_max_bytes: int


class SessionContext(TypedDict):
    """The session's scope, its clock and its limits."""

    session: str
    run_id: int | None
    intent_id: int | None
    intent_title: str | None
    run_started_at: str | None
    run_timeout_seconds: int | None
    run_deadline: str | None
    goal_id: str | None
    worker: str | None
    thread_id: int | None
    thread_title: str | None
    thread_private: bool
    capabilities: list[str]
    tools: list[str]
    now_utc: str
    goal_timezone: str
    now_local: str
    limits: Limits


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool(
        "Session context",
        "Who and when this session is: run (id, intent, start, deadline = start + timeout), "
        "goal, worker, thread, capabilities and tools served, the time now in UTC and in "
        "the goal's timezone (ISO 8601 with offset), and the limits the tools enforce. "
        "Call it first when unsure what you may do or how long you have.",
        read_only=True,
    )
    def get_context() -> SessionContext:
        return session_context(svc, scope, ctx.served)  # type: ignore[return-value]  # the context dict has the TypedDict's keys
