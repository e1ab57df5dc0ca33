"""Event payloads: strict JSON (an object or an array), bounded in size and depth."""

from __future__ import annotations

import json
import math
from typing import Any

from goalsui.errors import ValidationError
from goalsui.hooks.signing import MAX_BODY_BYTES

#: Containers nested deeper than this are refused (the console and the prompt walk them).
MAX_DEPTH = 64


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    """A JSON float; one overflowing to infinity (``1e400``) is refused: no database stores it."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _check_tree(data: Any, limit: int) -> None:
    """Depth at most ``limit``; every string and key is valid Unicode (no lone surrogates)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # an unpaired surrogate such as "\ud800"
                raise ValidationError("payload contains an unpaired surrogate escape") from None
            continue
        if isinstance(value, dict):
            children: list[Any] = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise ValidationError(f"payload is nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


def parse_payload(body: bytes, *, limit: int = MAX_BODY_BYTES) -> dict[str, Any] | list[Any]:
    """Parse a payload; ValidationError with a one-line reason when it is not usable. Refuses
    oversize, non-UTF-8, a BOM, invalid JSON (``NaN``, ``1e400``), top-level scalars, deep nesting
    and unpaired surrogates (PostgreSQL refuses them)."""
    if len(body) > limit:
        raise ValidationError(f"payload is too large ({len(body)} bytes, limit {limit})")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("payload is not valid UTF-8") from None
    try:
        data = json.loads(text, parse_constant=_no_constants, parse_float=_finite_float)
    except RecursionError:
        raise ValidationError(f"payload is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        where = f"{exc.msg[:100]} (line {exc.lineno}, column {exc.colno})"
        raise ValidationError(f"payload is not valid JSON: {where}") from None
    except ValueError as exc:
        raise ValidationError(f"payload is not valid JSON: {str(exc)[:100]}") from None
    if not isinstance(data, dict | list):
        raise ValidationError(
            f"payload must be a JSON object or array, found {type(data).__name__}"
        )
    _check_tree(data, MAX_DEPTH)
    return data
