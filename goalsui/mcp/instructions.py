"""What a session is told about itself: the MCP ``instructions`` and ``get_context``."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from goalsui.domain.capabilities import CAPABILITIES
from goalsui.errors import GoalsuiError

if TYPE_CHECKING:
    from goalsui.mcp.scope import Scope
    from goalsui.service import Service


#: how much ``goal_kb_read`` returns by default, in bytes
READ_DEFAULT_BYTES = 100 * 1024
#: the default page of the list tools
PAGE_DEFAULT = 100

#: the bounds a model should know (``state_max_bytes`` is added per KB)
LIMITS: dict[str, int] = {
    "goal_kb_read_default_bytes": READ_DEFAULT_BYTES,
    "file_max_bytes": 2 * 1024 * 1024,
    "list_page_default": PAGE_DEFAULT,
    "list_page_max": 1000,
    "message_max_chars": 64 * 1024,
    "todo_max_chars": 2000,
    "log_entry_max_chars": 20_000,
}

HABITS = (
    "When you promise to come back to something (a reminder, a check later, a retry), "
    "schedule it now with schedule_intent: a promise that is not scheduled is never kept. "
    "Before you end, add a todo (todo_add) for every piece of work you leave unfinished."
)


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when is not None else None


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def goal_timezone(service: Service, scope: Scope) -> str:
    """The goal's zone: the worker's, else the first non-UTC worker's, else UTC."""
    with contextlib.suppress(GoalsuiError):
        workers = service.goals.get(scope.goal_id).workers if scope.goal_id else []
        own = [w.timezone for w in workers if w.name == scope.worker and w.timezone]
        others = [w.timezone for w in workers if w.timezone and w.timezone != "UTC"]
        return (own or others or ["UTC"])[0]
    return "UTC"


def _run_facts(service: Service, run_id: int) -> dict[str, Any]:
    from goalsui.runners.turn import resolve_timeout

    try:
        run = service.runs.get(run_id)
        intent = service.intents.get(run.intent_id)
    except GoalsuiError:
        return {"run_id": run_id}
    started = _aware(run.started_at) if run.started_at else None
    timeout = resolve_timeout(service, intent)
    deadline = started + timedelta(seconds=timeout) if started else None
    return {
        "run_id": run_id,
        "intent_id": run.intent_id,
        "intent_title": intent.title,
        "run_started_at": _iso(started),
        "run_timeout_seconds": int(timeout),
        "run_deadline": _iso(deadline.astimezone(UTC) if deadline else None),
    }


def session_context(service: Service, scope: Scope, tools: frozenset[str]) -> dict[str, Any]:
    """Everything ``get_context`` answers (JSON-ready; no host paths)."""
    from zoneinfo import ZoneInfo

    now = _aware(service.now()).astimezone(UTC)
    zone = goal_timezone(service, scope)
    try:
        local = now.astimezone(ZoneInfo(zone))
    except (KeyError, ValueError):
        zone, local = "UTC", now
    out: dict[str, Any] = {"run_id": None, "intent_id": None, "intent_title": None}
    out.update(run_started_at=None, run_timeout_seconds=None, run_deadline=None)
    if scope.run_id is not None:
        out.update(_run_facts(service, scope.run_id))
    thread_title, private = None, False
    if scope.thread_id is not None:
        with contextlib.suppress(GoalsuiError):
            thread = service.threads.get(scope.thread_id)
            thread_title, private = thread.title, bool(thread.private)
    caps = [
        cap
        for cap, names in CAPABILITIES.items()
        if any(name in tools for name in names)
        and not (cap == "read_kb" and scope.readable is not None and "goal_kb_list" not in tools)
    ]
    limits = dict(LIMITS)
    with contextlib.suppress(GoalsuiError):
        limits["state_max_bytes"] = service.kb.state_limit()
    return {
        **out,
        "session": "run" if scope.run_id is not None else "operator",
        "goal_id": scope.goal_id,
        "worker": scope.worker,
        "thread_id": scope.thread_id,
        "thread_title": thread_title,
        "thread_private": private,
        "capabilities": caps,
        "tools": sorted(tools),
        "now_utc": _iso(now),
        "goal_timezone": zone,
        "now_local": _iso(local),
        "limits": limits,
    }


def session_instructions(service: Service, scope: Scope) -> str:
    """The MCP ``instructions`` of one session: who and when it is, what it may do."""
    from goalsui.mcp.tools import served_tools

    tools = served_tools(service, scope)
    ctx = session_context(service, scope, tools)
    run = f"run {ctx['run_id']} (intent {ctx['intent_id']}: {ctx['intent_title']!r})"
    where = [run if ctx["run_id"] is not None else "an operator's session (no run)"]
    if ctx["goal_id"]:
        where.append(f"goal {ctx['goal_id']}")
    if ctx["worker"]:
        where.append(f"worker {ctx['worker']}")
    if ctx["thread_id"] is not None:
        private = ", private" if ctx["thread_private"] else ""
        where.append(f"thread {ctx['thread_id']} ({ctx['thread_title']!r}{private})")
    lines = [
        "goalsui's tools act on one scope: " + ", ".join(where) + ".",
        f"Now: {ctx['now_utc']} UTC = {ctx['now_local']} in the goal's timezone "
        f"{ctx['goal_timezone']}.",
    ]
    if ctx["run_deadline"]:
        lines.append(
            f"This run ends at {ctx['run_deadline']} at the latest (started "
            f"{ctx['run_started_at']}, timeout {ctx['run_timeout_seconds']} s); its tools "
            "close when it ends."
        )
    caps = ", ".join(ctx["capabilities"]) or "none (lookups only)"
    lines += [
        f"Capabilities: {caps}. A tool not listed needs another capability; its error says "
        "which. get_context returns all of this again, with the limits.",
        "Paths are relative to the goal directory. List tools page: pass next_cursor back "
        "as cursor while truncated is true. goal_kb_read returns at most about 100 KB per "
        "call (offset and limit page through a larger file).",
    ]
    if "schedule_intent" in tools or "todo_add" in tools:
        lines.append(HABITS)
    return "\n".join(lines)
