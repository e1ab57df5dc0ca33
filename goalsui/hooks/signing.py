"""Webhook signatures: pure helpers shared by the listener and ``goalsui event emit``.

goalsui style: ``X-Goalsui-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>``
with ``X-Goalsui-Timestamp`` (Unix seconds) and ``X-Goalsui-Delivery`` (a unique id).
GitHub style: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`` with
``X-GitHub-Delivery``. Comparisons are constant-time (:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid

TIMESTAMP = "X-Goalsui-Timestamp"
DELIVERY = "X-Goalsui-Delivery"
SIGNATURE = "X-Goalsui-Signature"
GITHUB_SIGNATURE = "X-Hub-Signature-256"
GITHUB_DELIVERY = "X-GitHub-Delivery"

#: A signed timestamp may be this far in the past or the future.
TOLERANCE_S = 300
#: Bodies larger than this are refused (413).
MAX_BODY_BYTES = 1024 * 1024
#: A delivery id: 1-200 printable ASCII characters, no spaces.
_DELIVERY_RE = re.compile(r"[\x21-\x7e]{1,200}")
_SIG_RE = re.compile(r"sha256=([0-9a-fA-F]{64})")
_TS_RE = re.compile(r"[0-9]{1,12}")


def _hex(secret: str | bytes, message: bytes) -> str:
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign(secret: str | bytes, timestamp: int | str, body: bytes) -> str:
    """``sha256=<hex>`` over ``timestamp + "." + body`` (goalsui style)."""
    return "sha256=" + _hex(secret, str(timestamp).encode("ascii") + b"." + body)


def sign_github(secret: str | bytes, body: bytes) -> str:
    """``sha256=<hex>`` over the raw body (GitHub's ``X-Hub-Signature-256``)."""
    return "sha256=" + _hex(secret, body)


def _matches(expected: str, given: str | None) -> bool:
    m = _SIG_RE.fullmatch((given or "").strip())
    if m is None:
        return False
    # Both sides are 64 ASCII hex characters here; compare_digest is constant-time.
    return hmac.compare_digest(expected[len("sha256=") :], m.group(1).lower())


def verify(secret: str | bytes, timestamp: str, body: bytes, signature: str | None) -> bool:
    """True when ``signature`` is goalsui's signature of ``timestamp`` and ``body``."""
    if not secret or not isinstance(timestamp, str) or not _TS_RE.fullmatch(timestamp):
        return False
    return _matches(sign(secret, timestamp, body), signature)


def verify_github(secret: str | bytes, body: bytes, signature: str | None) -> bool:
    """True when ``signature`` is GitHub's ``X-Hub-Signature-256`` of ``body``."""
    return bool(secret) and _matches(sign_github(secret, body), signature)


def parse_timestamp(text: str | None) -> int | None:
    """Unix seconds from a header value, or None when it is missing or malformed."""
    if text is None or not _TS_RE.fullmatch(text.strip()):
        return None
    return int(text.strip())


def timestamp_fresh(timestamp: int, now: float) -> bool:
    """True when ``timestamp`` is within :data:`TOLERANCE_S` seconds of ``now`` (either way)."""
    return abs(now - timestamp) <= TOLERANCE_S


def valid_delivery_id(value: str | None) -> bool:
    return value is not None and bool(_DELIVERY_RE.fullmatch(value))


def new_delivery_id() -> str:
    return str(uuid.uuid4())


def delivery_header(style: str) -> str:
    return GITHUB_DELIVERY if style == "github" else DELIVERY


def signed_headers(
    secret: str | bytes,
    body: bytes,
    delivery_id: str,
    *,
    style: str = "goalsui",
    timestamp: int | None = None,
) -> dict[str, str]:
    """The headers that make ``body`` a valid signed delivery for a source of ``style``."""
    headers = {"Content-Type": "application/json"}
    if style == "github":
        return headers | {GITHUB_DELIVERY: delivery_id, GITHUB_SIGNATURE: sign_github(secret, body)}
    ts = int(time.time()) if timestamp is None else int(timestamp)
    return headers | {TIMESTAMP: str(ts), DELIVERY: delivery_id, SIGNATURE: sign(secret, ts, body)}
