"""What the main screen's keys act on: the item under the cursor of the focused pane."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SelectionKind(StrEnum):
    """The kind of item selected (a ``StrEnum``: equal to the tree's and tables' kind strings)."""

    NONE = "none"
    GOAL = "goal"
    WORKER = "worker"
    INBOX = "inbox"
    OUTBOX = "outbox"
    RUNS = "runs"
    GOAL_LOG = "goal-log"
    INTENT = "intent"
    RUN = "run"
    THREAD = "thread"
    TODO = "todo"


@dataclass(frozen=True)
class Selection:
    """What the keys act on: the item under the cursor of the focused pane."""

    kind: SelectionKind = SelectionKind.NONE
    pane: str = ""
    goal_id: str | None = None
    worker: str | None = None
    intent_id: int | None = None
    run_id: int | None = None
    thread_id: int | None = None
    todo_id: int | None = None
