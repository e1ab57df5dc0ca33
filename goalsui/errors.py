"""User-facing errors: each renders as one clear line, never a traceback."""

from __future__ import annotations

from typing import Any


class GoalsuiError(Exception):
    """A problem the operator can fix; ``str(err)`` is a complete one-line message."""

    def __str__(self) -> str:
        return " ".join(super().__str__().split())


class ValidationError(GoalsuiError):
    """Bad input: a name, a path, a schedule, a timestamp, a duration."""


class ScheduleError(ValidationError):
    """An invalid cron expression, timezone, instant or interval."""


class NotFound(GoalsuiError):
    """The goal, worker, thread, todo, intent or run does not exist."""


class Conflict(GoalsuiError):
    """The operation does not fit the current state (e.g. resume of a cancelled intent)."""


class KBError(GoalsuiError):
    """A KB file that cannot be used: carries the file, the line and the reason."""

    def __init__(self, path: str, reason: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = " ".join(str(reason).split())
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {self.reason}")

    def as_problem(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.reason}


class FatalError(GoalsuiError):
    """Going on would do harm: the process that meets it (a scheduler) must stop."""


class DatabaseReplaced(FatalError):
    """The SQLite file was deleted or replaced under a running goalsui (a split brain)."""


class NoDatabase(GoalsuiError):
    """A KB whose database was created once has none now: it is not created again silently."""
