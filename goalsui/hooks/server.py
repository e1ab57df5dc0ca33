"""The HTTP event receiver: ``POST /hooks/<source>`` in the running asyncio loop. Nothing is parsed
or stored before the signature holds: source (404/503), size and encoding (413/400), signature and
timestamp (401), delivery id and JSON (400), then one store per delivery id (202; 409 for a repeat).
Errors are one-line JSON with secrets redacted; slow clients are bounded by
:mod:`goalsui.ops.listen`."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler

from goalsui.domain.names import NAME_RE
from goalsui.domain.views import EmitResult
from goalsui.errors import GoalsuiError
from goalsui.hooks import signing
from goalsui.hooks.net import is_loopback
from goalsui.hooks.payload import parse_payload
from goalsui.ops import listen
from goalsui.ops.listen import Limits, QuietLog

log = logging.getLogger("goalsui.hooks")

BODY_TIMEOUT_S = 10.0
Payload = dict[str, Any] | list[Any]


@dataclass
class _State:
    service: Any
    clock: Callable[[], float]
    environ: Mapping[str, str]
    quiet: QuietLog
    body_timeout: float

    def secrets(self) -> list[str]:
        try:
            sources = self.service.config().hooks.values()
        except Exception:  # noqa: BLE001 - redaction never fails the error answer
            return []
        return [value for src in sources if (value := self.environ.get(src.secret_env))]


STATE_KEY: web.AppKey[_State] = web.AppKey("hooks_state", _State)


def _answer(code: int, error: str | None = None, **data: Any) -> web.Response:
    """Small JSON; a timed-out or oversize request's connection is closed, not reused."""
    body = {"error": error, **data} if error is not None else data
    response = web.json_response(body, status=code)
    if code in (408, 413):
        response.force_close()
    return response


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return " ".join(text.split())[:300]


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every answer is small JSON; nothing unexpected escapes as a stack trace."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _answer(exc.status, (exc.reason or "error").lower())
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a generic 500, logged without secrets
        secrets = request.app[STATE_KEY].secrets()
        log.error(
            "hook listener: internal error on %s %s: %s: %s",
            request.method,
            _redact(request.path[:100], secrets),
            type(exc).__name__,
            _redact(str(exc), secrets),
        )
        return _answer(500, "internal error")


async def _healthz(request: web.Request) -> web.Response:
    return _answer(200, None, status="ok")


def _refuse(
    request: web.Request, status: int, error: str, source: str, **data: Any
) -> web.Response:
    quiet = request.app[STATE_KEY].quiet
    quiet.log(logging.INFO, f"{source}:{status}", "hook %s: refused %d (%s)", source, status, error)
    return _answer(status, error, **data)


@dataclass(eq=False)  # hashable, as an exception must be
class _Refusal(Exception):
    """A delivery refused at one of the checks: its status, error and extra fields."""

    status: int
    error: str
    data: dict[str, Any] = field(default_factory=dict)


_TOO_LARGE = f"body too large (limit {signing.MAX_BODY_BYTES} bytes)"


async def _receive(request: web.Request) -> web.Response:
    """``POST /hooks/<source>``: the module docstring's checks in order."""
    state = request.app[STATE_KEY]
    service = state.service
    source = request.match_info.get("source", "")
    if not NAME_RE.fullmatch(source):
        return _refuse(request, 404, "unknown hook source", "?")
    try:
        style, secret = await _configured(service, state, source)
        body = await _read_body(request, state)
        _check_signature(request, style, secret, body, state.clock())
        # The request is authentic from here on.
        delivery, payload = _delivery(request, style, body)
        result = await _store(service, source, payload, delivery)
    except _Refusal as refusal:
        return _refuse(request, refusal.status, refusal.error, source, **refusal.data)
    log.info(
        "hook %s: delivery %s stored as event %s, fired %s",
        source,
        delivery,
        result.event_id,
        result.fired,
    )
    return _answer(202, None, event_id=result.event_id, fired=list(result.fired))


async def _configured(service: Any, state: _State, source: str) -> tuple[str, str]:
    """Step 1: the source's signing style and secret (404 unknown, 503 secret unset)."""
    config = await asyncio.to_thread(service.config)
    spec = config.hooks.get(source)
    if spec is None:
        raise _Refusal(404, "unknown hook source")
    secret = state.environ.get(spec.secret_env, "")
    if not secret:
        log.warning(
            "hook %s: refused: environment variable %s is unset or empty", source, spec.secret_env
        )
        raise _Refusal(503, "hook source is not ready: its secret is not set")
    return spec.style, secret


async def _read_body(request: web.Request, state: _State) -> bytes:
    """Step 2: the body, at most 1 MiB, not content-encoded, received in time."""
    if request.content_length is not None and request.content_length > signing.MAX_BODY_BYTES:
        raise _Refusal(413, _TOO_LARGE)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise _Refusal(400, "content encodings are not accepted; send the body as is")
    try:
        body = await asyncio.wait_for(request.read(), state.body_timeout)
    except TimeoutError:
        raise _Refusal(408, f"body not received within {state.body_timeout:g} s") from None
    except web.HTTPRequestEntityTooLarge:
        raise _Refusal(413, _TOO_LARGE) from None
    except (ConnectionResetError, HttpProcessingError):
        raise _Refusal(400, "incomplete body") from None
    if len(body) > signing.MAX_BODY_BYTES:
        raise _Refusal(413, _TOO_LARGE)
    return body


def _check_signature(
    request: web.Request, style: str, secret: str, body: bytes, now: float
) -> None:
    """Step 3: the signature, and for goalsui-style sources the timestamp (401)."""
    headers = request.headers
    if style == "github":
        signature = headers.get(signing.GITHUB_SIGNATURE)
        if not signature:
            raise _Refusal(401, f"missing {signing.GITHUB_SIGNATURE} header")
        if not signing.verify_github(secret, body, signature):
            raise _Refusal(401, "bad signature")
        return
    signature = headers.get(signing.SIGNATURE)
    raw_ts = headers.get(signing.TIMESTAMP)
    if not signature or raw_ts is None:
        raise _Refusal(401, f"missing {signing.SIGNATURE} or {signing.TIMESTAMP} header")
    timestamp = signing.parse_timestamp(raw_ts)
    if timestamp is None:
        raise _Refusal(401, "bad timestamp: expected Unix seconds")
    if not signing.verify(secret, raw_ts.strip(), body, signature):
        raise _Refusal(401, "bad signature")
    if not signing.timestamp_fresh(timestamp, now):
        raise _Refusal(401, f"stale timestamp (more than {signing.TOLERANCE_S} s from now)")


def _delivery(request: web.Request, style: str, body: bytes) -> tuple[str, Payload]:
    """Step 4: the delivery id and the JSON payload (400)."""
    headers = request.headers
    delivery = headers.get(signing.delivery_header(style))
    if delivery is None:
        raise _Refusal(400, f"missing {signing.delivery_header(style)} header")
    if not signing.valid_delivery_id(delivery):
        raise _Refusal(400, "bad delivery id: 1-200 printable characters, no spaces")
    json_type = re.fullmatch(r"application/(.*\+)?json", request.content_type.lower())
    if "Content-Type" in headers and not json_type:  # application/json or application/*+json
        raise _Refusal(400, "body must be JSON (Content-Type: application/json)")
    try:
        return delivery, parse_payload(body)
    except GoalsuiError as exc:
        raise _Refusal(400, str(exc)) from None


async def _store(service: Any, source: str, payload: Payload, delivery: str) -> EmitResult:
    """Step 5: the event stored once per delivery id (400 refused, 409 repeated)."""
    try:
        result: EmitResult = await asyncio.to_thread(service.events.emit, source, payload, delivery)
    except GoalsuiError as exc:
        raise _Refusal(400, str(exc)) from None
    if result.duplicate:
        raise _Refusal(409, "duplicate delivery", {"event_id": result.event_id})
    return result


#: A running hook listener; ``await listener.close()`` stops it.
Listener = listen.Served


async def start_listener(
    service: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    clock: Callable[[], float] = time.time,
    environ: Mapping[str, str] | None = None,
    body_timeout: float = BODY_TIMEOUT_S,
    limits: Limits | None = None,
) -> Listener:
    """Serve ``POST /hooks/<source>`` and ``GET /healthz`` on ``host:port`` in this loop."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise GoalsuiError(f"invalid hooks port {port!r}: use 0-65535")
    limits = limits or Limits()
    quiet = QuietLog(log, limits.log_interval)
    app = web.Application(client_max_size=signing.MAX_BODY_BYTES, middlewares=[_guard])
    env = os.environ if environ is None else environ
    app[STATE_KEY] = _State(service, clock, env, quiet, body_timeout)
    app.router.add_post("/hooks/{source}", _receive)
    app.router.add_get("/healthz", _healthz)
    served = await listen.serve(
        app,
        host,
        port,
        name="hook listener",
        failure="cannot listen for hooks",
        limits=limits,
        quiet=quiet,
    )
    if not is_loopback(host):
        log.warning(
            "hook listener bound to %s (not loopback): anyone who can reach it may try deliveries; "
            "only signed ones are accepted",
            host,
        )
    sources = ", ".join(sorted(service.config().hooks)) or "none configured"
    log.info("hook listener on http://%s:%s (sources: %s)", host, served.port, sources)
    return served
