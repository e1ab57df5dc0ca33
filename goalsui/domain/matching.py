"""Event filters: does a JSON payload contain what the filter asks for?"""

from __future__ import annotations

from typing import Any


def _scalar_equal(want: Any, got: Any) -> bool:
    # JSON true is not 1: Python's True == 1 must not leak into matching.
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want is got
    if isinstance(want, dict | list) or isinstance(got, dict | list):
        return False
    return bool(want == got)


def _matches(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            key in got and _matches(value, got[key]) for key, value in want.items()
        )
    if isinstance(want, list):
        return isinstance(got, list) and all(
            any(_matches(element, candidate) for candidate in got) for element in want
        )
    return _scalar_equal(want, got)


def filter_matches(filter: dict[str, Any] | None, payload: Any) -> bool:
    """JSON subset match: None or ``{}`` matches all; dict keys match recursively, a list
    element-wise against any payload element, scalars by equality (``true`` is not ``1``)."""
    if filter is None or (isinstance(filter, dict) and not filter):
        return True
    return _matches(filter, payload)
