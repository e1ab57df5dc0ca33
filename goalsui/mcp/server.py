"""``goalsui mcp``: the tool server over stdio, narrowed to one scope. Every call is checked against
the database first and recorded in ``tool_call`` afterwards."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from goalsui import __version__
from goalsui.errors import GoalsuiError
from goalsui.mcp.instructions import session_instructions
from goalsui.mcp.scope import Scope
from goalsui.mcp.tools import ToolContext, not_served_message, served_tools
from goalsui.service import Service


def _one_line(exc: ToolError) -> ToolError:
    """A tool error of one line: argument validation lists only the first problem."""
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        first = errors()[0] if errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
        message = first.get("msg", "invalid value")
        return ToolError(f"bad argument '{where}': {message}")
    return ToolError(" ".join(str(exc).split()))


def _result_text(result: Any) -> str:
    """The result's text: every tool answers its JSON as text (ToolContext.tool)."""
    return "\n".join(t for c in result.content if (t := getattr(c, "text", "")))


class ToolServer(MCPServer):
    """An MCPServer that checks a run's liveness before and records every call after."""

    def __init__(self, service: Service, scope: Scope) -> None:
        super().__init__(
            name="goalsui",
            version=__version__,
            instructions=session_instructions(service, scope),
            log_level="WARNING",
        )
        self.service = service
        self.scope = scope

    def _record(self, name: str, arguments: dict[str, Any], text: str, is_error: bool) -> None:
        if self.scope.run_id is None:
            return
        self.service.agents.record_tool_call(
            self.scope.run_id, name, arguments, text, is_error=is_error
        )

    async def list_tools(self) -> Any:
        """The scope's tools; a run's session records that its agent was offered them."""
        tools = await super().list_tools()
        if self.scope.run_id is not None:  # an operator's session notes nothing
            await anyio.to_thread.run_sync(self._note_session, [tool.name for tool in tools])
        return tools

    def _note_session(self, tools: list[str] | None) -> None:
        if self.scope.run_id is None:
            return
        # a run that ended meanwhile has nothing to note: its calls are refused anyway
        with contextlib.suppress(GoalsuiError):
            self.service.agents.record_tool_session(self.scope.run_id, tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            schema = self._tool_input_schema(name)
            if schema is None:  # not served: say what grants it
                why = await anyio.to_thread.run_sync(
                    not_served_message, self.service, self.scope, name
                )
                raise ToolError(why)
            allowed = schema.get("properties", {})  # the SDK would drop other arguments silently
            if extra := sorted(str(key) for key in arguments if key not in allowed):
                known = ", ".join(allowed) or "none"
                raise ToolError(f"unknown argument {extra[0]!r} (this tool takes: {known})")
            if self.scope.run_id is not None:  # a run's tools end with it
                try:
                    await anyio.to_thread.run_sync(self.service.agents.live_run, self.scope.run_id)
                except GoalsuiError as exc:
                    raise ToolError(str(exc)) from None
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            error = _one_line(exc)
            await anyio.to_thread.run_sync(self._record, name, arguments, str(error), True)
            raise error from None
        is_error = bool(getattr(result, "is_error", False))
        await anyio.to_thread.run_sync(
            self._record, name, arguments, _result_text(result), is_error
        )
        return result


def build_server(service: Service, scope: Scope) -> ToolServer:
    """A server offering exactly the tools of ``scope``, one module of tools per group."""
    from goalsui.mcp.tools import context, goals, intents, kb, nightshift, threads, todos

    server = ToolServer(service, scope)
    ctx = ToolContext(service, scope, server, served_tools(service, scope))
    for module in (context, goals, kb, todos, intents, threads, nightshift):
        module.register(ctx)
    return server


def serve(service: Service, scope: Scope) -> None:
    """Serve over stdio until the client closes the pipe."""
    server = build_server(service, scope)
    server._note_session(None)  # the agent started this process: its session is open
    from goalsui.mcp.guard import run_stdio  # every request line answered, with a reason

    run_stdio(server)
