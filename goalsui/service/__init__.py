"""The one service API (:class:`Service` in ``api.py``) of the console, the CLI and the tool server.

The names below load on first use (PEP 562), so that light modules of this package
(``quick``, ``state_dir``) import without the database stack."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goalsui.domain.intent_spec import MAX_INSTRUCTION, MAX_TITLE, IntentSpec
    from goalsui.domain.states import ChangeTopic
    from goalsui.domain.views import EmitResult, GoalView, Problem, WorkerView
    from goalsui.service.api import Service
    from goalsui.service.kbindex import GOAL_HOLDS, REMOVED_FROM_KB, WORKER_KEY, worker_intent_key
    from goalsui.service.overview import schedule_preview
    from goalsui.service.state_dir import default_state_dir

_WHERE = {
    "ChangeTopic": "goalsui.domain.states",
    "EmitResult": "goalsui.domain.views",
    "GOAL_HOLDS": "goalsui.service.kbindex",
    "GoalView": "goalsui.domain.views",
    "IntentSpec": "goalsui.domain.intent_spec",
    "MAX_INSTRUCTION": "goalsui.domain.intent_spec",
    "MAX_TITLE": "goalsui.domain.intent_spec",
    "Problem": "goalsui.domain.views",
    "REMOVED_FROM_KB": "goalsui.service.kbindex",
    "Service": "goalsui.service.api",
    "WORKER_KEY": "goalsui.service.kbindex",
    "WorkerView": "goalsui.domain.views",
    "default_state_dir": "goalsui.service.state_dir",
    "schedule_preview": "goalsui.service.overview",
    "worker_intent_key": "goalsui.service.kbindex",
}

__all__ = [
    "ChangeTopic",
    "EmitResult",
    "GOAL_HOLDS",
    "GoalView",
    "IntentSpec",
    "MAX_INSTRUCTION",
    "MAX_TITLE",
    "Problem",
    "REMOVED_FROM_KB",
    "Service",
    "WORKER_KEY",
    "WorkerView",
    "default_state_dir",
    "schedule_preview",
    "worker_intent_key",
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
