"""Waiting for a reply turn from the command line (``goalsui thread say``). It lives in the CLI
because it may start a scheduler, which the service must not."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from goalsui.domain.records import saved_id
from goalsui.domain.replies import is_reply
from goalsui.domain.states import RunStatus
from goalsui.errors import ValidationError
from goalsui.service.threads import ReplyResult

if TYPE_CHECKING:
    from goalsui.domain.records import RunRecord
    from goalsui.scheduler import Scheduler
    from goalsui.service import Service


#: How long to wait for another scheduler (console, daemon) to start the turn before
#: running one here: a running scheduler looks at the database at least every second.
PICKUP_SECONDS = 2.5
_POLL = 0.25


async def await_reply(
    service: Service,
    intent_id: int,
    *,
    timeout: float,
    pickup: float | None = None,
    on_run: Callable[[RunRecord], None] | None = None,
) -> ReplyResult:
    """Wait for a reply's decision; with no scheduler in ``pickup`` s, run one here."""
    intent = service.intents.get(intent_id)
    if not is_reply(intent.operation_key):
        raise ValidationError(f"intent {intent_id} is not a reply")
    pickup = PICKUP_SECONDS if pickup is None else pickup
    deadline = time.monotonic() + timeout
    scheduler = None
    started = time.monotonic()
    seen: set[int] = set()
    try:
        while True:
            result = await asyncio.to_thread(service.threads.reply_state, intent_id)
            runs = result.runs if result else service.runs.list(intent_id=intent_id, limit=50)
            for run in sorted(runs, key=lambda r: r.id or 0):
                if run.status != RunStatus.RUNNING and run.id not in seen:
                    seen.add(saved_id(run))
                    if on_run is not None:
                        on_run(run.record())
            if result is not None:
                return result
            if time.monotonic() > deadline:
                raise ValidationError(
                    f"no reply within {timeout:.0f}s (intent {intent_id} keeps trying; "
                    f"'goalsui runs --intent {intent_id}' shows its runs)"
                )
            if scheduler is None and not runs and time.monotonic() - started > pickup:
                scheduler = await _start_scheduler(service)
            await asyncio.sleep(_POLL)
    finally:
        if scheduler is not None:
            with contextlib.suppress(Exception):
                await scheduler.stop()


async def _start_scheduler(service: Service) -> Scheduler:
    from goalsui.scheduler import Scheduler

    scheduler = Scheduler(service)
    await scheduler.start()
    return scheduler
