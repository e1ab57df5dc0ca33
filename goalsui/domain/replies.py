"""Replies: the ``at``-now intent keyed ``reply:<message id>`` (so never asked twice)."""

from __future__ import annotations

REPLY_PREFIX = "reply:"
_TITLE_CHARS = 80


def reply_key(message_id: int) -> str:
    """The operation key of the reply to message ``message_id``."""
    return f"{REPLY_PREFIX}{message_id}"


def is_reply(operation_key: str | None) -> bool:
    """True for the intent of a reply turn."""
    return bool(operation_key) and str(operation_key).startswith(REPLY_PREFIX)


def reply_title(text: str) -> str:
    """``Reply to: <first line of the user's text>``, cut to one short line."""
    first = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "")
    if len(first) > _TITLE_CHARS:
        first = first[: _TITLE_CHARS - 1] + "…"
    return f"Reply to: {first or '(empty message)'}"
