"""Ports that idle, slow or numerous clients cannot starve: a connection cap, a header timeout,
accept() errors survived, refusals logged once an interval."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from goalsui.errors import GoalsuiError

log = logging.getLogger("goalsui.listen")

BACKLOG = 128
#: accept() errors after which asyncio pauses the port for a second and tries again
ACCEPT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


@dataclass(frozen=True)
class Limits:
    """One port's limits: connections, header (and idle) timeout, refusal log interval."""

    max_connections: int = 128
    header_timeout: float = 5.0  # seconds
    log_interval: float = 60.0  # seconds


class QuietLog:
    """One log line per ``key`` per ``interval`` seconds; the others are counted."""

    def __init__(self, logger: logging.Logger, interval: float) -> None:
        self.logger = logger
        self.interval = interval
        self._next: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def let_through(self, key: str) -> int | None:
        """How many lines of ``key`` were held since the last one, or None: hold this one."""
        now = time.monotonic()
        if now < self._next.get(key, 0.0):
            self._held[key] = self._held.get(key, 0) + 1
            return None
        self._next[key] = now + self.interval
        return self._held.pop(key, 0)

    def log(self, level: int, key: str, message: str, *args: object) -> None:
        """Log ``message`` unless ``key`` was logged within the interval."""
        held = self.let_through(key)
        if held is None:
            return
        if held:
            message += f" (and {held} more like it in the last {self.interval:g}s)"
        self.logger.log(level, message, *args)


class QuietFilter(logging.Filter):
    """One record per message template per ``interval``: a flood must not flood the log."""

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.quiet = QuietLog(log, interval)

    def filter(self, record: logging.LogRecord) -> bool:
        held = self.quiet.let_through(str(record.msg))
        if held is None:
            return False
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {' '.join(str(record.exc_info[1]).split())[:200]}"
            record.args = ()
        record.exc_info, record.exc_text = None, None
        if held:
            record.msg = (
                f"{record.getMessage()} (and {held} more in the last {self.quiet.interval:g}s)"
            )
            record.args = ()
        return True


def quiet_aiohttp(interval: float) -> None:
    """Install one :class:`QuietFilter` on aiohttp's server loggers (once per process)."""
    for name in ("aiohttp.server", "aiohttp.web"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietFilter) for f in logger.filters):
            logger.addFilter(QuietFilter(interval))


_TOO_MANY = b"too many connections\n"
#: what a connection over the cap is told before it is closed (uvicorn's answer too)
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
    b"Retry-After: 5\r\nConnection: close\r\n\r\n%s" % (len(_TOO_MANY), _TOO_MANY)
)


class _Refused(asyncio.Protocol):
    """A connection over the cap: told 503 and closed at once, nothing read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cast(asyncio.WriteTransport, transport).write(REFUSAL)
        transport.close()


class _Counted(asyncio.Protocol):
    """A kept connection, counted by its cap from accept to loss.

    The server's own count starts with ``connection_made``, a loop turn after the accept:
    a burst accepted in one turn would all pass a check made against it."""

    __slots__ = ("_inner", "_cap", "_open")

    def __init__(self, inner: asyncio.Protocol, cap: ConnectionCap) -> None:
        self._inner, self._cap, self._open = inner, cap, True
        cap.open += 1

    def _close(self) -> None:
        if self._open:
            self._open = False
            self._cap.open -= 1

    def __del__(self) -> None:  # a connection never made (the accept failed) is not counted
        self._close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._close()
        self._inner.connection_lost(exc)


class ConnectionCap:
    """A protocol factory for ``loop.create_server`` allowing ``limit`` connections."""

    def __init__(self, server: Any, limit: int, quiet: QuietLog, name: str = "listener") -> None:
        self.server = server
        self.limit = limit
        self.quiet = quiet
        self.name = name
        self.refused = 0
        #: connections accepted and not yet lost
        self.open = 0

    def __call__(self) -> asyncio.BaseProtocol:
        if self.open >= self.limit:
            self.refused += 1
            said = "%s: connection refused: %d connections open (the limit)"
            self.quiet.log(logging.WARNING, "refused-connection", said, self.name, self.limit)
            return _Refused()
        return _Counted(self.server(), self)


_accept_quiet = QuietLog(log, Limits.log_interval)


def guard_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Failed ``accept()``: one line a minute; a failing handler never stops the loop."""
    previous = loop.get_exception_handler()
    if getattr(previous, "goalsui_guard", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        try:
            if isinstance(exc, OSError) and exc.errno in ACCEPT_ERRNOS:
                _accept_quiet.log(
                    logging.WARNING,
                    f"accept-{exc.errno}",
                    "cannot accept connections: %s; the port pauses for a second and tries "
                    "again (the process is out of file descriptors or memory)",
                    exc.strerror or exc,
                )
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)
        except Exception:  # noqa: BLE001 - a log handler out of descriptors: drop the line
            return

    handler.goalsui_guard = True  # type: ignore[attr-defined]  # marks the installed guard
    loop.set_exception_handler(handler)


@dataclass
class Served:
    """An application served on a bounded port; ``await served.close()`` stops it."""

    host: str
    port: int
    runner: web.AppRunner
    server: asyncio.AbstractServer
    cap: ConnectionCap

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def close(self) -> None:
        """Stop listening, then end the connections and the application."""
        self.server.close()
        with contextlib.suppress(Exception):
            await self.runner.cleanup()


async def serve(
    app: web.Application,
    host: str,
    port: int,
    *,
    name: str,
    failure: str,
    limits: Limits | None = None,
    quiet: QuietLog | None = None,
    access_log: Any = None,
) -> Served:
    """Serve ``app`` on ``host:port`` (0: a free port) with ``limits`` (default: the defaults),
    its idle timeout ``limits.header_timeout``; GoalsuiError ``<failure> on host:port: why`` if
    it cannot bind."""
    limits = limits or Limits()
    runner = web.AppRunner(
        app, keepalive_timeout=limits.header_timeout, access_log=access_log, handle_signals=False
    )
    await runner.setup()
    quiet_aiohttp(limits.log_interval)
    loop = asyncio.get_running_loop()
    guard_accept_errors(loop)
    cap = ConnectionCap(
        runner.server, limits.max_connections, quiet or QuietLog(log, limits.log_interval), name
    )
    try:
        listening = await loop.create_server(cap, host, port, backlog=BACKLOG)
    except OSError as exc:
        await runner.cleanup()
        raise GoalsuiError(f"{failure} on {host}:{port}: {exc.strerror or exc}") from None
    sockets = listening.sockets
    bound = int(sockets[0].getsockname()[1]) if sockets else port
    return Served(host, bound, runner, listening, cap)
