"""How a turn's agent reaches goalsui's tools: the scheduler's HTTP listener, per run. The MCP SDK
is imported lazily, in a thread; :func:`no_tools_reason`: no run is ``ok`` without its tools."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from goalsui.runners.presets import McpLaunch, TurnTools

if TYPE_CHECKING:
    from goalsui.mcp.http import ToolHost
    from goalsui.service import Service


#: the reason of a run whose agent never listed its goalsui tools
NO_TOOLS = "no-tools"

_HOSTS: weakref.WeakKeyDictionary[Any, ToolHost] = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def turn_tools(
    service: Service, run_id: int, *, http: bool = True
) -> AsyncIterator[TurnTools]:
    """The run's tools for the duration of the block (``http=False``: stdio only)."""
    stdio = McpLaunch.for_run(service.kb.root, service.state_dir, service.db_url, run_id)
    if not http:
        yield TurnTools(stdio)
        return
    if service not in _HOSTS:  # one listener per service, made by the first turn
        module = await asyncio.to_thread(importlib.import_module, "goalsui.mcp.http")
        _HOSTS.setdefault(service, module.ToolHost(service))  # another turn may have made one
    async with _HOSTS[service].serve_run(run_id) as endpoint:
        yield TurnTools(stdio, endpoint)


async def stop_tool_host(service: Service) -> None:
    """Close the scheduler's tool listener (a scheduler that stops calls this)."""
    host = _HOSTS.pop(service, None)
    if host is not None:
        await host.stop()


def no_tools_reason(session: Mapping[str, Any] | None) -> str | None:
    """Why a turn that had to act through goalsui's tools did not get them (None: it did)."""
    if not session:
        return f"{NO_TOOLS}: the agent never opened its goalsui tool session"
    if session.get("tools") is None:
        return f"{NO_TOOLS}: the agent opened its goalsui tool session but never listed the tools"
    return None
