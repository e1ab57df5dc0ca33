"""The tool server's tools, one module per group; :func:`register_all` adds those in scope."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from goalsui.errors import GoalsuiError
from goalsui.mcp.scope import Scope
from goalsui.service.agents import acting

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from goalsui.service import Service

__all__ = ["ToolContext", "register_all"]

F = TypeVar("F", bound=Callable[..., Any])


class ToolFailure(Exception):
    """Raised by a tool for a one-line error the caller sees (converted by the server)."""


@dataclass
class ToolContext:
    """What every tool gets: the service, the scope, and the server to register on."""

    service: Service
    scope: Scope
    server: MCPServer

    def tool(self, description: str) -> Callable[[F], F]:
        """Register the decorated function as a tool if the scope allows its name.

        Inside the call, service errors become one-line tool errors and journal
        entries carry the run id and the tool name.
        """

        def decorator(fn: F) -> F:
            name = fn.__name__
            if name not in self.scope.tools:
                return fn

            @functools.wraps(fn)
            def call(*args: Any, **kwargs: Any) -> Any:
                from mcp.server.mcpserver.exceptions import ToolError

                try:
                    with acting(self.scope.run_id, name):
                        return fn(*args, **kwargs)
                except (GoalsuiError, ToolFailure) as exc:
                    raise ToolError(" ".join(str(exc).split())) from None

            self.server.add_tool(call, name=name, description=description)
            return fn

        return decorator

    @property
    def provenance(self) -> str:
        who = f"run {self.scope.run_id}" if self.scope.run_id is not None else "an agent session"
        return f"Posted by {who} through goalsui's tools"


def register_all(ctx: ToolContext) -> None:
    from goalsui.mcp.tools import goals, intents, kb, nightshift, threads, todos

    for module in (goals, kb, todos, intents, threads, nightshift):
        module.register(ctx)
