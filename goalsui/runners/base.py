"""The contract between the scheduler and the runners.

The scheduler claims an intent, records a ``running`` IntentRun, then awaits
:func:`goalsui.runners.turn.run_turn`, which assembles the prompt, runs the runner
(a command or a builtin), streams output to the run's log file, and delivers the
result (outbox file, goal log, thread message with provenance). The scheduler then
records the outcome and applies the retry / lifecycle rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TurnOutcome:
    """How one isolated turn ended."""

    status: str  # ok | silent | failed | timeout | cancelled
    reason: str | None = None  # one line, for people; never a secret
    exit_code: int | None = None
    output_tail: str | None = None  # the last few KiB of stdout/stderr
    output_path: Path | None = None  # the full log of the run
    outbox_path: Path | None = None  # where the result was delivered
    # what the turn cost, as the agent reported it; None means unknown, never zero
    usage: Usage | None = None
    # the transcript's inputs: the prompt given, the argv run (secrets redacted)
    prompt: str | None = None
    argv: tuple[str, ...] | None = None
    # an infrastructure failure (e.g. no file descriptors left): not counted toward
    # auto-disable
    infrastructure: bool = False
    # a turn the runner decided not to start (e.g. reason "budget"): recorded skipped
    skipped: bool = False


@dataclass(frozen=True)
class Usage:
    """Tokens, cost and model of one turn, each None when the agent did not say."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None
