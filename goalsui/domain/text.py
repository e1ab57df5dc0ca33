"""Text as the database can hold it: PostgreSQL rejects NUL, so the store strips it on
both engines and a record reads back the same whatever the engine."""

from __future__ import annotations

from typing import Any, overload

from goalsui.errors import ValidationError

NUL = "\x00"


@overload
def strip_nul(text: str) -> str: ...
@overload
def strip_nul(text: None) -> None: ...
def strip_nul(text: str | None) -> str | None:
    """``text`` without NUL characters (None stays None)."""
    if text is None or NUL not in text:
        return text
    return text.replace(NUL, "")


def strip_nul_deep(value: Any) -> Any:
    """A JSON-like value with NUL removed from every string, keys too."""
    if isinstance(value, str):
        return strip_nul(value)
    if isinstance(value, dict):
        items = [(strip_nul_deep(k), strip_nul_deep(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [strip_nul_deep(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return cleaned if isinstance(value, list) else tuple(cleaned)
    return value


def one_line(value: object, limit: int, *, empty: str, too_long: str) -> str:
    """``value`` as one line, its whitespace collapsed; a :class:`ValidationError` saying
    ``empty`` if nothing is left, ``too_long`` if more than ``limit`` characters are."""
    text = " ".join(str(value).split())
    if not text:
        raise ValidationError(empty)
    if len(text) > limit:
        raise ValidationError(too_long)
    return text
