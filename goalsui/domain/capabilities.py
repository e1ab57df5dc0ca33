"""Worker capabilities and the tool server's tools they unlock. Pure rules, no I/O.

Intent tools never reach a private thread's run; a worker's turn may always read its own
``prompt.md`` and the goal's ``protocol.md`` (:func:`own_files`), even without ``read_kb``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: capability -> the tools it unlocks
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "read_kb": ("goal_kb_list", "goal_kb_read"),
    "write_kb": ("goal_kb_write", "goal_log_append", "update_worker"),
    "schedule": ("schedule_intent", "cancel_intent", "list_intents"),
    "todos": ("todo_list", "todo_add", "todo_complete", "todo_reopen"),
    "threads": ("thread_post", "thread_read"),
    "goals": ("setup_goal", "run_worker_now", "delete_goal"),
    "nightshift": ("nightshift_plan", "nightshift_plan_add"),
}
ALWAYS = ("list_goals", "get_goal", "get_context")
ALL_TOOLS = ALWAYS + tuple(t for tools in CAPABILITIES.values() for t in tools)
#: what an unscoped session (no run, no goal) is served: lookups only
READ_ONLY = (*ALWAYS, "goal_kb_list", "goal_kb_read", "todo_list", "list_intents")
INTENT_TOOLS = CAPABILITIES["schedule"]
THREAD_TOOLS = CAPABILITIES["todos"] + CAPABILITIES["threads"]
#: served to every worker's turn; without ``read_kb`` it reads only :func:`own_files`
OWN_FILES_TOOL = "goal_kb_read"
#: the placeholders of a command's argv that receive the run's MCP config (the same
#: texts as ``goalsui.runners.presets.MCP_CONFIG`` and ``MCP_STDIO_CONFIG``)
MCP_PLACEHOLDERS = ("{mcp_config}", "{mcp_stdio_config}")
MCP_CONFIG = MCP_PLACEHOLDERS[0]


#: tools that change goals beyond the session's own files: never served to a session
#: without a goal of its own (thread-only) or in a private thread
GOAL_CHANGING = CAPABILITIES["goals"] + CAPABILITIES["nightshift"]


def capability_of(tool: str) -> str | None:
    """The capability granting ``tool`` ("always" for every session's; None if unknown)."""
    found = next((cap for cap, tools in CAPABILITIES.items() if tool in tools), None)
    return "always" if tool in ALWAYS else found


def own_files(worker: str) -> tuple[tuple[str, ...], ...]:
    """The files (path parts inside the goal) a worker's turn may always read."""
    return (("protocol.md",), ("workers", worker, "prompt.md"))


def tools_for(
    capabilities: Iterable[str], *, has_thread: bool, private_thread: bool, has_worker: bool = False
) -> frozenset[str]:
    """The tools a scope may call: its capabilities' tools, narrowed by its thread (a
    worker's scope also gets ``goal_kb_read``)."""
    tools = set(ALWAYS)
    for name in capabilities:
        tools.update(CAPABILITIES.get(name, ()))
    if has_worker:
        tools.add(OWN_FILES_TOOL)
    if private_thread:
        tools.difference_update(INTENT_TOOLS)
    if not has_thread:
        tools.difference_update(THREAD_TOOLS)
    return frozenset(tools)


def speaks_mcp(runner: Mapping[str, Any] | None) -> bool:
    """True for an agent preset or an argv with ``{mcp_config}``: its agent gets the tools."""
    if not runner or runner.get("builtin"):
        return False
    if runner.get("agent"):
        return True
    return any(p in str(arg) for arg in runner.get("command") or () for p in MCP_PLACEHOLDERS)


def idle_capabilities(
    capabilities: Iterable[str], runner: Mapping[str, Any] | None, *, nightshift_goal: bool
) -> list[str]:
    """One line for each capability of a worker that would grant nothing with ``runner``."""
    caps = [name for name in capabilities if name in CAPABILITIES]
    if caps and runner and runner.get("builtin"):
        return [
            f"capabilities {', '.join(caps)} grant nothing: the builtin "
            f"{runner['builtin']!r} runner starts no agent"
        ]
    if caps and runner and not speaks_mcp(runner):
        return [
            f"capabilities {', '.join(caps)} grant nothing: the command runner gets no "
            f"tools (its argv has no {MCP_CONFIG} placeholder)"
        ]
    if "nightshift" in caps and not nightshift_goal:
        return ["capability nightshift grants nothing: this is not a nightshift goal"]
    return []
