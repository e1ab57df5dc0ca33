"""Every request line on the stdio tool server gets an answer, with a reason.

The SDK logs a line it cannot read (a lone surrogate ``"\\ud800"``, a 5,000-digit number)
and the client waits forever; numbers of 2^63 or more failed in the database with no
reason. So each line is checked first and a bad one answered here with a JSON-RPC error
(its ``id`` if readable, else ``-32700`` with ``id: null``; a notification is dropped).
Bounds: integers within ±(2^53 − 1) (I-JSON, RFC 7493), floats finite, valid Unicode,
numbers at most 100 characters."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

MAX_SAFE_INT = 2**53 - 1
_MAX_NUMBER_CHARS = 100
PARSE_ERROR = -32700
INVALID_PARAMS = -32602


@dataclass(eq=False)  # hashable, as an exception must be
class LineProblem(ValueError):
    """A request line the server will not pass on: ``code`` and one-line ``message``."""

    code: int
    message: str
    request_id: Any = None


def _int(text: str) -> int:
    if len(text) > _MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} digits is out of range")
    value = int(text)
    if abs(value) > MAX_SAFE_INT:
        raise ValueError(f"number {text[:30]} is out of range (at most 2^53-1 in size)")
    return value


def _float(text: str) -> float:
    if len(text) > _MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters is out of range")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:30]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _lone_surrogate(data: Any) -> bool:
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _loose(line: str) -> dict[str, Any]:
    """The line's object read leniently ({} when it is none)."""
    try:
        loose = json.loads(line, parse_int=lambda t: int(t) if len(t) <= 20 else None)
    except (ValueError, RecursionError):
        return {}
    return loose if isinstance(loose, dict) else {}


def _request_id(line: str) -> Any:
    """The line's ``id`` when it is one a reply can carry (else None)."""
    rid = _loose(line).get("id")
    if isinstance(rid, str) and not _lone_surrogate(rid):
        return rid
    if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) <= MAX_SAFE_INT:
        return rid
    return None


def check_line(line: str) -> None:
    """Raise :class:`LineProblem` when ``line`` is not a request this server will read."""
    if not line.strip():
        return
    try:
        data = json.loads(line, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        raise LineProblem(PARSE_ERROR, "the request is nested too deeply") from None
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        code = (
            INVALID_PARAMS if "out of range" in reason or "JSON number" in reason else PARSE_ERROR
        )
        raise LineProblem(code, f"invalid request: {reason[:120]}", _request_id(line)) from None
    if _lone_surrogate(data):
        raise LineProblem(
            INVALID_PARAMS,
            "invalid request: a string holds an unpaired surrogate escape (not valid Unicode)",
            _request_id(line),
        )


class _GuardedLines:
    """The lines of the wire for the SDK's reader; refused lines are answered here."""

    def __init__(self, stream: TextIOWrapper) -> None:
        self.stream = anyio.wrap_file(stream)
        self.replies: Any = None  # the SDK's write stream, once it is open
        self.ready = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.stream:
            try:
                check_line(line)
            except LineProblem as problem:
                await self._answer(line, problem)
                continue
            yield line

    async def _answer(self, line: str, problem: LineProblem) -> None:
        loose = _loose(line)
        if "method" in loose and "id" not in loose:  # a notification: nobody to answer
            return
        await self.ready.wait()
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=problem.request_id,
            error=types.ErrorData(code=problem.code, message=problem.message),
        )
        await self.replies.send(SessionMessage(error))


async def _serve(server: MCPServer, lines: _GuardedLines) -> None:
    # the SDK types stdin as an anyio file; the guarded lines are read the same way
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]  # an async line iterator, as the SDK reads it
        lines.replies = write_stream
        lines.ready.set()
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())


def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdio, every line checked (fd 0 is the null device meanwhile)."""
    wire = os.dup(0)
    os.set_inheritable(wire, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    stream = TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace")
    try:
        anyio.run(_serve, server, _GuardedLines(stream))
    finally:
        with contextlib.suppress(OSError):
            os.dup2(stream.buffer.fileno(), 0)
        stream.close()
