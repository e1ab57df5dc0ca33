"""Worker capabilities and the tool server's tools they unlock. Pure rules, no I/O.

A worker's ``definition.yaml`` lists ``capabilities``; each names a group of tools of
``goalsui mcp``. A few read-only lookups are always served. Intent tools never reach a
run whose thread is private, and thread tools need a thread in the scope.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ALWAYS",
    "CAPABILITIES",
    "INTENT_TOOLS",
    "READ_ONLY",
    "THREAD_TOOLS",
    "ALL_TOOLS",
    "tools_for",
    "unknown_capabilities",
]

#: capability -> the tools it unlocks
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "read_kb": ("goal_kb_list", "goal_kb_read"),
    "write_kb": ("goal_kb_write", "goal_log_append", "update_worker"),
    "schedule": ("schedule_intent", "cancel_intent", "list_intents"),
    "todos": ("todo_list", "todo_add", "todo_complete", "todo_reopen"),
    "threads": ("thread_post",),
    "goals": ("setup_goal", "run_worker_now"),
    "nightshift": ("nightshift_plan", "nightshift_plan_add"),
}
ALWAYS = ("list_goals", "get_goal")
ALL_TOOLS = ALWAYS + tuple(t for tools in CAPABILITIES.values() for t in tools)
#: what an unscoped session (no run, no goal) is served: lookups only
READ_ONLY = ("list_goals", "get_goal", "goal_kb_list", "goal_kb_read", "todo_list", "list_intents")
INTENT_TOOLS = CAPABILITIES["schedule"]
THREAD_TOOLS = CAPABILITIES["todos"] + CAPABILITIES["threads"]


def unknown_capabilities(names: Iterable[str]) -> list[str]:
    """The names that are not capabilities, in their order."""
    return [name for name in names if name not in CAPABILITIES]


def tools_for(
    capabilities: Iterable[str], *, has_thread: bool, private_thread: bool
) -> frozenset[str]:
    """The tools a scope may call: its capabilities' tools, narrowed by its thread."""
    tools = set(ALWAYS)
    for name in capabilities:
        tools.update(CAPABILITIES.get(name, ()))
    if private_thread:
        tools.difference_update(INTENT_TOOLS)
    if not has_thread:
        tools.difference_update(THREAD_TOOLS)
    return frozenset(tools)
