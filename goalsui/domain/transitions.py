"""Which operator actions each intent and run state allows. Pure: a table and lookups,
asked by the service's guards and the console alike, so a key shown is a key that works."""

from __future__ import annotations

from enum import StrEnum

from goalsui.domain.states import IntentStatus, RunStatus


class Action(StrEnum):
    """An operator action on an intent (a schedule) or on one of its runs."""

    PAUSE = "pause"
    RESUME = "resume"
    RUN_NOW = "run-now"
    STOP_RUN = "stop-run"
    END_SCHEDULE = "end-schedule"
    REINSTATE = "reinstate"
    RETRY = "retry"
    DISMISS = "dismiss"


#: How a refusal names each action ("it cannot be <word>").
_DONE_WORD = {
    Action.PAUSE: "paused",
    Action.RESUME: "resumed",
    Action.RUN_NOW: "run now",
    Action.STOP_RUN: "stopped",
    Action.END_SCHEDULE: "ended",
    Action.REINSTATE: "reinstated",
    Action.RETRY: "retried",
    Action.DISMISS: "dismissed",
}

_A = Action
INTENT_ACTIONS: dict[IntentStatus, frozenset[Action]] = {
    IntentStatus.ACTIVE: frozenset({_A.PAUSE, _A.RUN_NOW, _A.END_SCHEDULE, _A.RETRY}),
    IntentStatus.PAUSED: frozenset({_A.PAUSE, _A.RESUME, _A.END_SCHEDULE, _A.RETRY}),
    # run-now while firing is recorded as a skipped (overlap) run; pause waits for the run
    IntentStatus.FIRING: frozenset({_A.PAUSE, _A.RUN_NOW, _A.STOP_RUN, _A.END_SCHEDULE}),
    IntentStatus.FAILED: frozenset({_A.PAUSE, _A.RESUME, _A.END_SCHEDULE, _A.RETRY}),
    IntentStatus.DONE: frozenset(),
    # an ended schedule can be reinstated (``goalsui intent resume`` does it)
    IntentStatus.CANCELLED: frozenset({_A.REINSTATE}),
}
"""The actions each intent status allows (``FIRING`` with a pause pending adds RESUME)."""

_FINISHED_FAILURE = frozenset({_A.RETRY, _A.DISMISS})
RUN_ACTIONS: dict[RunStatus, frozenset[Action]] = {
    RunStatus.RUNNING: frozenset({_A.STOP_RUN}),
    RunStatus.OK: frozenset({_A.DISMISS}),
    RunStatus.SILENT: frozenset({_A.DISMISS}),
    RunStatus.SKIPPED: frozenset({_A.DISMISS}),
    RunStatus.FAILED: _FINISHED_FAILURE,
    RunStatus.TIMEOUT: _FINISHED_FAILURE,
    RunStatus.INTERRUPTED: _FINISHED_FAILURE,
    RunStatus.MISSED: _FINISHED_FAILURE,
    RunStatus.CANCELLED: _FINISHED_FAILURE,
}
"""The actions each run status allows (retry fires the run's intent again now)."""


def intent_actions(status: IntentStatus | str, *, pause_pending: bool = False) -> frozenset[Action]:
    """What an operator may do to an intent in ``status`` (an unknown status: nothing)."""
    try:
        allowed = INTENT_ACTIONS[IntentStatus(status)]
    except ValueError:
        return frozenset()
    if pause_pending and status == IntentStatus.FIRING:
        return allowed | {Action.RESUME}
    return allowed


def run_actions(status: RunStatus | str) -> frozenset[Action]:
    """What an operator may do to a run in ``status`` (an unknown status: nothing)."""
    try:
        return RUN_ACTIONS[RunStatus(status)]
    except ValueError:
        return frozenset()


def intent_allows(status: IntentStatus | str, action: Action) -> bool:
    """True when ``action`` may be taken on an intent in ``status``."""
    return action in intent_actions(status)


def run_allows(status: RunStatus | str, action: Action) -> bool:
    """True when ``action`` may be taken on a run in ``status``."""
    return action in run_actions(status)


def refusal(
    subject: str,
    status: str,
    action: Action,
    allowed: frozenset[Action],
    *,
    how_to_resume: str = "",
) -> str:
    """Why ``action`` is refused; "resume it first" only where resuming is possible."""
    if action not in (Action.RESUME, Action.REINSTATE) and (
        Action.RESUME in allowed or Action.REINSTATE in allowed
    ):
        return f"{subject} is {status}; resume it first{how_to_resume}"
    return f"{subject} is {status}; it cannot be {_DONE_WORD[action]}"
