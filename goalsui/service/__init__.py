"""The one service API (:class:`Service` in ``api.py``) of the console, the CLI and the tool server.

The names below load on first use (PEP 562), so that light modules of this package
(``quick``, ``state_dir``) import without the database stack."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goalsui.domain.intent_spec import IntentSpec
    from goalsui.domain.views import EmitResult, GoalView, Problem, WorkerView
    from goalsui.service.api import Service
    from goalsui.service.overview import schedule_preview

_WHERE = {
    "EmitResult": "goalsui.domain.views",
    "GoalView": "goalsui.domain.views",
    "IntentSpec": "goalsui.domain.intent_spec",
    "Problem": "goalsui.domain.views",
    "Service": "goalsui.service.api",
    "WorkerView": "goalsui.domain.views",
    "schedule_preview": "goalsui.service.overview",
}

__all__ = [
    "EmitResult",
    "GoalView",
    "IntentSpec",
    "Problem",
    "Service",
    "WorkerView",
    "schedule_preview",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'goalsui.service' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
