"""The name rule shared by goal ids, worker names and event sources. Pure."""

from __future__ import annotations

import re

from goalsui.errors import ValidationError

NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$")


def check_name(value: object, what: str = "name") -> str:
    """Return ``value`` if it is a valid goal id, worker name or event source, else raise."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        shown = repr(value)[:80]
        raise ValidationError(
            f"invalid {what} {shown}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting and ending with a letter or digit"
        )
    return value
