"""A token on every request to ``goalsui serve`` (``?token=``, Bearer or cookie; compared in
constant time), on a port bounded by :mod:`goalsui.ops.listen`."""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.log import access_logger

from goalsui.cli.common import stop_on_signals
from goalsui.ops import listen

TOKEN_ENV = "GOALSUI_SERVE_TOKEN"
COOKIE = "goalsui_serve_token"
MIN_TOKEN_CHARS = 16

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _presented(request: web.Request) -> tuple[str | None, bool]:
    """The token the request carries, and whether it came in the query string."""
    query = request.query.get("token")
    if query:
        return query, True
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), False
    return request.cookies.get(COOKIE), False


def token_middleware(token: str) -> Any:
    """An aiohttp middleware refusing every request without ``token`` (401)."""
    expected = token.encode("utf-8")

    @web.middleware
    async def check_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        given, from_query = _presented(request)
        if given is None or not hmac.compare_digest(given.encode("utf-8"), expected):
            return web.Response(
                status=401,
                text="goalsui serve: a valid token is required (open the URL printed at start)\n",
                headers={"WWW-Authenticate": "Bearer"},
            )
        response = await handler(request)
        if from_query and not response.prepared:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
        return response

    return check_token


_TOKEN_IN_URL = re.compile(r"([?&]token=)[^&\s\"]*")


def redact_token(record: logging.LogRecord) -> bool:
    """A log filter hiding ``token=...`` in request lines (the access log prints the query)."""
    message = record.getMessage()
    if "token=" in message:
        record.msg, record.args = _TOKEN_IN_URL.sub(r"\1<hidden>", message), ()
    return True


def with_token(server_class: type[Any], token: str) -> type[Any]:
    """textual-serve's ``Server`` checking ``token``, its port bounded by the default limits."""

    class TokenServer(server_class):  # type: ignore[misc]  # textual-serve ships no types: Any
        def initialize_logging(self) -> None:
            super().initialize_logging()
            for name in ("aiohttp.access", "aiohttp.server", "aiohttp.web"):
                logging.getLogger(name).addFilter(redact_token)

        async def _make_app(self) -> web.Application:
            app: web.Application = await super()._make_app()
            app.middlewares.append(token_middleware(token))
            return app

        def serve(self, debug: bool = False) -> None:
            """textual-serve's ``serve`` on a bounded port; SIGINT and SIGTERM stop it."""
            self.debug = debug
            self.initialize_logging()
            asyncio.run(self._serve_bounded())

        async def _serve_bounded(self) -> None:
            stop = stop_on_signals()
            served = await listen.serve(
                await self._make_app(),
                self.host,
                self.port,
                name="goalsui serve",
                failure="cannot serve",
                access_log=access_logger,
            )
            try:
                await stop.wait()
            finally:
                await served.close()

    return TokenServer
