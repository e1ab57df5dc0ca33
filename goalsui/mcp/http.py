"""The tool server over MCP Streamable HTTP in the scheduler: one 127.0.0.1 listener, a 256-bit
bearer token per live run (docs/agents.md, "How a turn gets its tools")."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from goalsui.mcp.guard import LineProblem, check_line
from goalsui.mcp.scope import Scope as ToolScope
from goalsui.mcp.scope import run_scope
from goalsui.mcp.server import build_server
from goalsui.runners.presets import ToolEndpoint

if TYPE_CHECKING:
    from starlette.types import Message, Receive, Scope, Send

    from goalsui.service import Service


log = logging.getLogger("goalsui.mcp")

MCP_PATH = "/mcp"
#: the most connections the listener keeps open at once (a turn's agent uses one or two)
MAX_CONNECTIONS = 256
#: seconds an idle keep-alive connection is kept
KEEP_ALIVE_S = 30
#: seconds a connection has to send a whole request's headers
HEADER_TIMEOUT_S = 5.0
#: the largest request body read (the SDK's own default limit)
MAX_BODY = 4 * 1024 * 1024


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class _GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a connection cap and a header timeout."""

    _header_timer: asyncio.TimerHandle | None = None
    _waiting_past: Any = None  # the request cycle current when the timer was armed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn narrows BaseTransport
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            transport.close()
            return
        self._await_request()

    def data_received(self, data: bytes) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if self._header_timer is None and idle:
            self._await_request()
        super().data_received(data)
        if self._header_timer is not None and self.cycle is not self._waiting_past:
            self._header_timer.cancel()  # a whole request arrived in time
            self._header_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def _await_request(self) -> None:
        self._waiting_past = self.cycle
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._too_slow)

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is self._waiting_past and not self.transport.is_closing():
            self.transport.close()


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the host process owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


class ToolHost:
    """The scheduler's tool listener: one 127.0.0.1 port, one scope per live run."""

    def __init__(self, service: Service) -> None:
        self.service = service
        #: each live run's Starlette app (its lifespan runs the run's own session manager)
        self._runs: dict[bytes, Any] = {}
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None
        self.port: int | None = None

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port) and serve until :meth:`stop`."""
        if self._task is not None and not self._task.done():
            return
        sock = socket.create_server(("127.0.0.1", 0))  # not inherited by the runners
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self,
            http=_GuardedH11,
            log_level="warning",
            access_log=False,
            lifespan="off",
            limit_concurrency=MAX_CONNECTIONS,
            timeout_keep_alive=KEEP_ALIVE_S,
            server_header=False,
            date_header=False,
        )
        server = _QuietServer(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="tool-host")
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise RuntimeError("the tool listener stopped before it started")
            await asyncio.sleep(0.005)
        log.info("goalsui tools served on 127.0.0.1:%s", self.port)

    async def stop(self) -> None:
        """Close every run's tools and the listener."""
        server, task = self._server, self._task
        self._server = self._task = None
        if server is not None:
            server.should_exit = True
        if task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(task, timeout=5.0)
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    @contextlib.asynccontextmanager
    async def serve_run(self, run_id: int) -> AsyncIterator[ToolEndpoint]:
        """A live run's tools for the duration of the block: its URL and bearer token."""
        scope = await asyncio.to_thread(run_scope, self.service, run_id)
        async with self.serve_scope(scope) as endpoint:
            yield endpoint

    @contextlib.asynccontextmanager
    async def serve_scope(self, scope: ToolScope) -> AsyncIterator[ToolEndpoint]:
        """Serve ``scope``'s tools at a fresh token until the block ends."""
        await self.start()
        # building the server (its tools' schemas, instructions) reads the database and
        # takes tens of ms: off this loop, which may be the console's
        app = await asyncio.to_thread(self._app, scope)
        token = secrets.token_urlsafe(32)
        key = _digest(token)
        async with app.router.lifespan_context(app):
            self._runs[key] = app
            try:
                yield ToolEndpoint(f"http://127.0.0.1:{self.port}{MCP_PATH}", token)
            finally:
                self._runs.pop(key, None)

    def _app(self, scope: ToolScope) -> Any:
        server = build_server(self.service, scope)
        return server.streamable_http_app(
            streamable_http_path=MCP_PATH, json_response=True, session_idle_timeout=None
        )

    # -- ASGI ----------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        app = self._runs.get(_digest(_bearer(scope)))
        if app is None or scope.get("path") != MCP_PATH:
            await _answer(send, 401, _error(None, -32001, "unknown or expired goalsui run token"))
            return
        if scope.get("method") == "POST":
            body = await _read_body(receive)
            if body is None:
                await _answer(send, 413, _error(None, -32600, "the request is too large"))
                return
            try:
                check_line(body.decode("utf-8", "replace"))
            except LineProblem as problem:  # answered with a reason, never dropped
                await _answer(send, 400, _error(problem.request_id, problem.code, problem.message))
                return
            receive = _replay(body, receive)
        await app(scope, receive, send)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body (None when it is over :data:`MAX_BODY`)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            return None
        if not message.get("more_body"):
            break
    return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands over ``body`` once, then waits on the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _error(request_id: Any, code: int, message: str) -> bytes:
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(reply, separators=(",", ":")).encode()


def _bearer(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            kind, _, token = bytes(value).decode("latin-1").partition(" ")
            if kind.lower() == "bearer":
                return token.strip()
    return ""


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
