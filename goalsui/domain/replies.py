"""Replies in a conversation: the one-shot intent that answers a user's message.

A reply intent is an ``at``-now intent on the thread whose ``operation_key`` is
``reply:<message id>`` (so posting the same message twice never asks twice). Its
instruction is the user's text; its result is posted as the reply.
"""

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
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = " ".join(first.split())
    if len(first) > _TITLE_CHARS:
        first = first[: _TITLE_CHARS - 1] + "…"
    return f"Reply to: {first or '(empty message)'}"
