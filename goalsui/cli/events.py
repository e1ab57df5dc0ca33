"""``goalsui event emit`` (signed delivery to a listener, or ``--local``) and ``goalsui events``."""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    add_options,
    answer,
    check_ranges,
    command,
    group,
    kb_path,
    local,
    open_service,
    table,
)
from goalsui.cli.inputs import read_input_bytes
from goalsui.domain.names import check_name
from goalsui.domain.shapes import event_json
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.hooks import signing
from goalsui.hooks.net import is_loopback
from goalsui.hooks.payload import parse_payload

HTTP_TIMEOUT_S = 15

EMIT_HELP = "sign a JSON payload and post it to a running hook listener (or store it with --local)"


def register(sub: Subparsers) -> None:
    esub = group(sub, "event", "send events to event intents")
    emit = command(esub, "emit", cmd_emit, EMIT_HELP)
    emit.add_argument("source", help="the hook source (hooks.sources in goalsui.yaml)")
    data = "JSON payload file, or - for stdin"
    emit.add_argument("--data", required=True, metavar="FILE", help=data)
    emit.add_argument("--delivery", metavar="ID", help="delivery id (default: a new UUID)")
    target = emit.add_mutually_exclusive_group()
    target.add_argument("--url", help="listener URL (default http://127.0.0.1:PORT/hooks/SOURCE)")
    add_options(
        target,
        ("--port", int, None, "N", "listener port on 127.0.0.1 (default $GOALSUI_HOOKS_PORT)"),
    )
    add_flags(target, local="store through the service directly: no HTTP, no secret")
    events = command(sub, "events", cmd_events, "received events and the intents each fired")
    events.add_argument("--limit", type=int, default=50)


def _target_url(args: argparse.Namespace, source: str) -> str:
    path = f"/hooks/{source}"
    if args.url:
        parts = urllib.parse.urlsplit(str(args.url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(
                f"invalid --url {args.url!r}: use http://HOST:PORT[/hooks/SOURCE]"
            )
        if parts.path in ("", "/"):
            parts = parts._replace(path=path)
        return urllib.parse.urlunsplit(parts)
    port = args.port
    if port is None:
        env = os.environ.get("GOALSUI_HOOKS_PORT", "")
        if not env:
            raise ValidationError("give --port N or --url URL of the hook listener (or --local)")
        try:
            port = int(env)
        except ValueError:
            raise ValidationError(f"invalid GOALSUI_HOOKS_PORT {env!r}") from None
    if not 1 <= port <= 65535:
        raise ValidationError(f"invalid port {port}: use 1-65535")
    return f"http://127.0.0.1:{port}{path}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A signed delivery is never re-sent to wherever a redirect points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    handlers: list[Any] = [_NoRedirect()]
    if is_loopback(urllib.parse.urlsplit(url).hostname or ""):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
            status, raw = response.status, response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read(64 * 1024)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise GoalsuiError(f"cannot reach the hook listener at {url}: {reason}") from None
    try:
        reply = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, ValueError):
        reply = {}
    return status, reply if isinstance(reply, dict) else {}


def _emit_http(
    args: argparse.Namespace, source: str, body: bytes, delivery: str
) -> tuple[Any, list[Any]]:
    """Post the signed delivery to the listener: the event id and the intents it fired."""
    from goalsui.kb.layout import KB

    url = _target_url(args, source)
    config = KB(kb_path(args)).config()
    spec = config.hooks.get(source)
    if spec is None:
        known = ", ".join(sorted(config.hooks)) or "none"
        raise ValidationError(
            f"unknown hook source '{source}' (configured in goalsui.yaml: {known}); "
            "use --local to store an event without the listener"
        )
    secret = os.environ.get(spec.secret_env, "")
    if not secret:
        raise ValidationError(
            f"hook source '{source}' needs its secret: set the environment variable {spec.secret_env}"
        )
    headers = signing.signed_headers(secret, body, delivery, style=spec.style)
    status, reply = _post(url, body, headers)
    if status != 202:
        error = plain(str(reply.get("error") or "no answer"), limit=200).replace("\n", " ")
        if status == 409:
            raise GoalsuiError(
                f"delivery '{delivery}' was already received; nothing fired ({error})"
            )
        raise GoalsuiError(f"the hook listener refused the delivery: HTTP {status}: {error}")
    return reply.get("event_id"), list(reply.get("fired") or [])


def cmd_emit(args: argparse.Namespace) -> int:
    source = check_name(args.source, "event source")
    delivery = args.delivery if args.delivery is not None else signing.new_delivery_id()
    if not signing.valid_delivery_id(delivery):
        raise ValidationError("invalid --delivery: use 1-200 printable characters without spaces")
    body = read_input_bytes(args.data, limit=signing.MAX_BODY_BYTES, what="payload")
    try:
        payload = parse_payload(body)
    except ValidationError as exc:
        raise ValidationError(f"{args.data}: {exc}") from None
    if args.local:
        result = open_service(args).events.emit(source, payload, delivery)
        if result.duplicate:
            raise GoalsuiError(
                f"delivery '{delivery}' was already received (event {result.event_id}); nothing fired"
            )
        event_id, fired = result.event_id, list(result.fired)
    else:
        event_id, fired = _emit_http(args, source, body, delivery)
    shown = ", ".join(str(i) for i in fired) or "nothing"
    text = f"event {event_id} ({source}/{delivery}) accepted; fired intents: {shown}"
    data = {"source": source, "delivery_id": delivery, "event_id": event_id, "fired": fired}
    return answer(args, {**data, "duplicate": False}, text)


def cmd_events(args: argparse.Namespace) -> int:
    check_ranges(("--limit", args.limit, 1, 100_000))
    events = open_service(args).events.list(limit=args.limit)
    rows = [
        [
            e.id,
            local(e.received_at),
            e.source,
            plain(e.delivery_id, limit=40).replace("\n", " "),
            ", ".join(str(i) for i in e.matched_intent_ids or []) or "-",
        ]
        for e in events
    ]
    headers = ["id", "received", "source", "delivery", "fired intents"]
    return answer(args, [event_json(e) for e in events], table(rows, headers, "no events"))
