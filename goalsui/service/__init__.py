"""The one service API the console, the CLI and the tool server use.

:class:`Service` (``facade.py``) over one module per aggregate; the views it returns
come from ``views.py``; intents are created from a
:class:`~goalsui.domain.intent_spec.IntentSpec`. See docs/architecture.md.
"""

from goalsui.domain.intent_spec import MAX_INSTRUCTION, MAX_TITLE, IntentSpec
from goalsui.domain.states import ChangeTopic
from goalsui.service.context import default_state_dir
from goalsui.service.facade import Service
from goalsui.service.kbindex import GOAL_HOLDS, REMOVED_FROM_KB, WORKER_KEY, worker_intent_key
from goalsui.service.overview import schedule_preview
from goalsui.service.views import EmitResult, GoalView, Problem, WorkerView

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
