"""Statuses and kinds: the small vocabulary every layer shares."""

from __future__ import annotations

from enum import StrEnum


class GoalStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"
    ARCHIVED = "archived"


class IntentKind(StrEnum):
    AT = "at"
    CRON = "cron"
    EVENT = "event"
    HEARTBEAT = "heartbeat"


class IntentStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    FIRING = "firing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class RunTrigger(StrEnum):
    SCHEDULE = "schedule"
    RUN_NOW = "run-now"
    EVENT = "event"
    CATCH_UP = "catch-up"
    RETRY = "retry"


class RunStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    SILENT = "silent"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"
    MISSED = "missed"


#: The reason of a fire skipped because the previous run of the intent still runs.
OVERLAP = "overlap"


class ChangeTopic(StrEnum):
    """What a change announced by the service touched (listeners re-read that part)."""

    GOALS = "goals"
    FILES = "files"
    THREADS = "threads"
    MESSAGES = "messages"
    TODOS = "todos"
    INTENTS = "intents"
    RUNS = "runs"
    ALERTS = "alerts"
    #: a lost cross-process listener came back: re-read everything
    RECONNECTED = "reconnected"


#: Statuses from which an intent never fires again on its own.
TERMINAL_INTENT = frozenset({IntentStatus.DONE, IntentStatus.CANCELLED})
#: Run statuses that count as a failure for retry and auto-disable.
FAILURE_RUNS = frozenset({RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.INTERRUPTED})
#: Run statuses of runs that executed a turn (the ones whose usage may be known).
EXECUTED_RUNS = tuple(
    s for s in RunStatus if s not in (RunStatus.RUNNING, RunStatus.SKIPPED, RunStatus.MISSED)
)
#: Run statuses shown on the Failures screen.
ATTENTION_RUNS = frozenset(
    {RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.INTERRUPTED, RunStatus.MISSED}
)


class SchedulerState(StrEnum):
    """Where a scheduler is in its life (``FAILED``: a task died, see ``Scheduler.error``)."""

    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    FAILED = "failed"
