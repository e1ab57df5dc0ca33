"""The tool server's tools, one module per group, and what they share (``openWorldHint`` always
false; one-line errors without the KB's location)."""

from __future__ import annotations

import functools
import json
import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.domain.capabilities import ALL_TOOLS, GOAL_CHANGING, capability_of
from goalsui.errors import GoalsuiError
from goalsui.mcp.scope import Scope
from goalsui.service.journal import acting

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from goalsui.service import Service

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

#: the largest page a list tool returns
MAX_PAGE = 1000
Cursor = Annotated[
    str | None, Field(description="next_cursor of the previous page; omit at first.")
]
GoalArg = Annotated[
    str | None,
    Field(description="The goal's id; omit for the session's own (a goal's session has only it)."),
]

#: command-line spellings in shared service messages -> the tools' argument names
_FLAG_WORDS = (
    ("or pass --tz", "or pass the 'timezone' argument"),
    ("(--event SOURCE)", "(argument 'event_source')"),
    ("name one with --goal", "name one with the 'goal_id' argument"),
)
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]*)")


class Paged(TypedDict):
    """One page of a list: pass next_cursor back as cursor while truncated is true."""

    total: int
    truncated: bool
    next_cursor: str | None


class ToolFailure(Exception):
    """Raised by a tool for a one-line error the caller sees (converted by the server)."""


def tool_message(text: str, kb_root: str | None = None) -> str:
    """A service error as a tool error: one line, no flags, no host paths."""
    text = " ".join(str(text).split())
    for old, new in _FLAG_WORDS:
        text = text.replace(old, new)
    text = _FLAG.sub(lambda m: "'" + m.group(1).replace("-", "_") + "'", text)
    if kb_root:
        text = text.replace(kb_root.rstrip("/") + "/", "").replace(kb_root, "<kb>")
    return text


def served_tools(service: Service, scope: Scope) -> frozenset[str]:
    """The tools served: the scope's, less goal-changing ones without an own goal or in private."""
    if goal_changing_withheld(service, scope):
        return scope.tools - set(GOAL_CHANGING)
    return scope.tools


def goal_changing_withheld(service: Service, scope: Scope) -> str | None:
    """Why a session gets no goal-changing tools (None: it may get them)."""
    if scope.goal_id is None and scope.thread_id is not None:
        return "a session without a goal of its own (a thread's session) changes no goals"
    if scope.thread_id is not None and _private(service, scope.thread_id):
        return "a private thread's session changes no goals"
    return None


def _private(service: Service, thread_id: int) -> bool:
    try:
        return bool(service.threads.get(thread_id).private)
    except GoalsuiError:
        return False


def not_served_message(service: Service, scope: Scope, name: str) -> str:
    """The error for a tool not served: the capability that grants it, or why it cannot."""
    cap = capability_of(name)
    if cap is None or name not in ALL_TOOLS:
        return f"no tool {name!r} in goalsui (get_context lists the tools of this session)"
    if name in GOAL_CHANGING and (why := goal_changing_withheld(service, scope)):
        return f"{name} is not served here: {why}"
    if name in scope.tools or cap == "always":
        return f"{name} is not served in this session ({scope.describe()})"
    if scope.goal_id is None and cap in ("read_kb", "write_kb", "nightshift"):
        return f"{name} needs a goal in the session's scope (capability '{cap}')"
    if scope.thread_id is None and cap in ("todos", "threads"):
        return f"{name} needs a thread in the session's scope (capability '{cap}')"
    if cap == "schedule" and scope.thread_id is not None and _private(service, scope.thread_id):
        return f"{name} is not served in a private thread (capability '{cap}')"
    who = f"worker '{scope.worker}'" if scope.worker else "this session"
    return (
        f"{name} is not granted: it needs the capability '{cap}', which {who} does not hold "
        f"(capabilities: in workers/<name>/definition.yaml)"
    )


def page(items: Sequence[T], cursor: str | None, limit: int) -> tuple[list[T], Paged]:
    """One page of ``items`` from ``cursor``, with ``total``, ``truncated`` and ``next_cursor``."""
    if not 1 <= limit <= MAX_PAGE:
        raise ToolFailure(f"limit must be between 1 and {MAX_PAGE}")
    start = 0
    if cursor:
        if not cursor.isdigit() or int(cursor) > len(items):
            raise ToolFailure(f"cursor {cursor!r} is not one this tool gave (start without one)")
        start = int(cursor)
    chunk = list(items[start : start + limit])
    end = start + len(chunk)
    more = end < len(items)
    return chunk, Paged(total=len(items), truncated=more, next_cursor=str(end) if more else None)


@dataclass
class ToolContext:
    """What every tool gets: the service, the scope, and the server to register on."""

    service: Service
    scope: Scope
    server: MCPServer
    served: frozenset[str]

    def tool(
        self,
        title: str,
        description: str,
        *,
        read_only: bool,
        destructive: bool = False,
        idempotent: bool = False,
    ) -> Callable[[F], F]:
        """Register the function as a tool if served; service errors become one-line errors."""

        def decorator(fn: F) -> F:
            name = fn.__name__
            if name not in self.served:
                return fn
            from mcp.server.mcpserver.exceptions import ToolError
            from mcp.types import CallToolResult, TextContent, ToolAnnotations

            kb_root = str(self.service.kb.root)

            @functools.wraps(fn)
            def call(*args: Any, **kwargs: Any) -> Any:
                for word in [k for k in kwargs if keyword.iskeyword(k)]:
                    kwargs[f"{word}_"] = kwargs.pop(word)  # 'in' arrives as in_
                try:
                    with acting(self.scope.run_id, name):
                        result = fn(*args, **kwargs)
                except (GoalsuiError, ToolFailure) as exc:
                    raise ToolError(tool_message(str(exc), kb_root)) from None
                text = json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
                return CallToolResult(
                    content=[TextContent(type="text", text=text)],
                    structured_content=result,
                )

            annotations = ToolAnnotations(
                title=title,
                read_only_hint=read_only,
                destructive_hint=False if read_only else destructive,
                idempotent_hint=True if read_only else idempotent,
                open_world_hint=False,
            )
            self.server.add_tool(
                call, name=name, title=title, description=description, annotations=annotations
            )
            return fn

        return decorator
