"""What happens to an intent whose run was interrupted: ``retry`` (a failure; plain
commands' default) or ``review`` (held, since an agent's run may have had side effects)."""

from __future__ import annotations

from typing import Any, Literal

InterruptPolicy = Literal["retry", "review"]
RETRY: InterruptPolicy = "retry"
REVIEW: InterruptPolicy = "review"
#: The prefix of ``intent.last_error`` while an interrupted run waits for the operator.
NEEDS_REVIEW = "needs review: "


def interrupt_policy(on_interrupt: str | None, runner: Any) -> InterruptPolicy:
    """The intent's ``on_interrupt``, else ``review`` for an agent preset, ``retry`` otherwise."""
    if on_interrupt in (RETRY, REVIEW):
        return REVIEW if on_interrupt == REVIEW else RETRY
    return REVIEW if isinstance(runner, dict) and runner.get("agent") else RETRY


#: How a run that could not start for a configuration reason begins its ``reason``.
CONFIG = "config: "


def config_error(run_id: int | None, reason: str | None) -> str:
    """The ``last_error`` of an intent whose run cannot start for a reason no retry fixes."""
    which = f"run {run_id}" if run_id else "its run"
    why = (reason or "").removeprefix(CONFIG) or "a configuration error"
    return (
        f"{NEEDS_REVIEW}{which} could not start ({CONFIG}{why}); fix the configuration, "
        "then retry it (or dismiss it to resume the schedule)"
    )


def needs_review_error(run_id: int | None, reason: str | None) -> str:
    """The ``last_error`` an intent carries while its interrupted run waits for review."""
    which = f"run {run_id}" if run_id else "its run"
    why = f" ({reason})" if reason else ""
    return f"{NEEDS_REVIEW}{which} was interrupted{why}; retry or dismiss it"
