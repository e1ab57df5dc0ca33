"""The one service API the console, the CLI and the tool server use."""

from goalsui.service.core import (
    GOAL_HOLDS,
    MAX_INSTRUCTION,
    MAX_TITLE,
    REMOVED_FROM_KB,
    WORKER_KEY,
    EmitResult,
    GoalView,
    Problem,
    Service,
    WorkerView,
    default_state_dir,
    schedule_preview,
    worker_intent_key,
)

__all__ = [
    "EmitResult",
    "GOAL_HOLDS",
    "GoalView",
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
