"""Limits that keep idle or slow clients from starving the process that hosts the listener.

- :class:`ConnectionCap` builds the listener's protocols: at most ``limit`` connections
  at once; one more is closed as soon as it is accepted (so a flood of connections costs
  at most ``limit`` file descriptors, and the scheduler keeps the rest).
- :class:`QuietLog` logs a repeated refusal once per interval, with the count of the
  ones it held back, instead of one line per attempt.

Header and body timeouts live with the server (aiohttp's idle timeout closes a
connection whose request headers are not complete in time; the handler bounds the
body read).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ConnectionCap", "QuietFilter", "QuietLog", "quiet_aiohttp"]


class QuietLog:
    """One log line per ``key`` per ``interval`` seconds; the others are counted."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._next: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def log(self, level: int, key: str, message: str, *args: object) -> bool:
        """Log ``message`` unless ``key`` was logged within the interval; True if logged."""
        now = self.clock()
        if now < self._next.get(key, 0.0):
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        if held:
            message += f" (and {held} more like it in the last {self.interval:g}s)"
        self._next[key] = now + self.interval
        self.logger.log(level, message, *args)
        return True


class QuietFilter(logging.Filter):
    """Lets one record per message template through per ``interval`` seconds, as one line.

    For aiohttp's own per-request error logs ("Error handling request" with a traceback
    for every malformed request): a flood of bad requests must not flood the log.
    """

    def __init__(self, interval: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._next: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = self.clock()
        if now < self._next.get(key, 0.0):
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._next[key] = now + self.interval
        held = self._held.pop(key, 0)
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {' '.join(str(record.exc_info[1]).split())[:200]}"
            record.args = ()
        record.exc_info, record.exc_text = None, None
        if held:
            record.msg = f"{record.getMessage()} (and {held} more in the last {self.interval:g}s)"
            record.args = ()
        return True


def quiet_aiohttp(interval: float) -> None:
    """Install one :class:`QuietFilter` on aiohttp's server loggers (once per process)."""
    for name in ("aiohttp.server", "aiohttp.web"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietFilter) for f in logger.filters):
            logger.addFilter(QuietFilter(interval))


class _Refused(asyncio.Protocol):
    """A connection over the cap: closed at once, nothing read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class ConnectionCap:
    """A protocol factory for ``loop.create_server`` allowing ``limit`` connections.

    ``server`` is aiohttp's low-level server (``AppRunner.server``): calling it makes the
    protocol of one connection, and ``server.connections`` lists the open ones.
    """

    def __init__(self, server: Any, limit: int, quiet: QuietLog) -> None:
        self.server = server
        self.limit = limit
        self.quiet = quiet
        self.refused = 0

    def __call__(self) -> asyncio.BaseProtocol:
        if len(self.server.connections) >= self.limit:
            self.refused += 1
            self.quiet.log(
                logging.WARNING,
                "refused-connection",
                "hook listener: connection refused: %d connections open (the limit)",
                self.limit,
            )
            return _Refused()
        protocol: asyncio.BaseProtocol = self.server()
        return protocol
