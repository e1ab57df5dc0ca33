"""The contract between the scheduler and the runners."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from goalsui.service import Service
    from goalsui.store.models import Intent, IntentRun

log = logging.getLogger("goalsui.runners")


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
    # the turn could not start for a reason no retry fixes (no runner configured, an
    # unknown preset or builtin, a program not found): failed once with reason
    # "config: ...", held for the operator, not retried, not counted toward auto-disable
    config_error: bool = False


@dataclass(frozen=True)
class Turn:
    """One claimed run and how to run it: what every step of a turn needs."""

    service: Service
    intent: Intent
    run: IntentRun
    timeout: float
    cancel: asyncio.Event
    grace: float
    on_spawn: Callable[[int], None] | None = None


class Prepared(NamedTuple):
    """What a turn's program gets: its stdin, working folder and environment, and its log."""

    prompt: str
    cwd: Path
    env: dict[str, str]
    log_path: Path


#: the run's token columns are 32-bit integers: a larger count is not a real one
MAX_TOKENS = 2**31 - 1
#: a reported cost above this is not believed (it would also swamp every sum)
MAX_COST_USD = 1_000_000.0
MAX_MODEL_CHARS = 200


@dataclass(frozen=True)
class Usage:
    """A turn's tokens, cost and model; None when unknown or out of range (``note`` says)."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    note: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        notes: list[str] = []
        limits = (("tokens_in", int, MAX_TOKENS), ("tokens_out", int, MAX_TOKENS))
        for name, kind, top in (*limits, ("cost_usd", int | float, MAX_COST_USD)):
            value = getattr(self, name)
            if value is None:
                continue
            # NaN and infinity fail the range test too
            if isinstance(value, bool) or not isinstance(value, kind) or not 0 <= value <= top:
                object.__setattr__(self, name, None)
                notes.append(f"{name} out of range")
        if self.model is not None:
            model = str(self.model)[:MAX_MODEL_CHARS]
            object.__setattr__(self, "model", model or None)
        if notes:
            note = "usage: " + ", ".join(notes) + " (recorded as unknown)"
            object.__setattr__(self, "note", note if self.note is None else self.note)
            log.warning("%s", note)
