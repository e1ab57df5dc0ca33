"""The monitor: the scheduler's parts run as named asyncio tasks, and a task that dies
stops the whole scheduler with a clear error, never silently (see docs/architecture.md,
"The scheduler").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from goalsui.scheduler.runtime import Runtime, describe

log = logging.getLogger("goalsui.scheduler")

PREFIX = "goalsui-scheduler-"


class Monitor:
    """Starts the named tasks and watches them; ``on_death`` stops the scheduler."""

    def __init__(self, rt: Runtime, on_death: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.rt = rt
        self._on_death = on_death
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._stopper: asyncio.Task[None] | None = None

    def spawn(self, name: str, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` as the task ``name``, watched."""
        loop = self.rt.loop
        assert loop is not None
        task = loop.create_task(work, name=PREFIX + name)
        self.tasks[name] = task
        task.add_done_callback(lambda t: self._ended(name, t))
        return task

    def _ended(self, name: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(name) is task:
            del self.tasks[name]
        if self.rt.closing and task.cancelled():
            return
        exc = None if task.cancelled() else task.exception()
        if task.cancelled():
            reason = "was cancelled"
        elif exc is not None:
            reason = f"died: {describe(exc)}"
            log.error("scheduler task %s died", name, exc_info=exc)
        elif self.rt.closing:
            return  # ended because the scheduler is stopping
        else:
            reason = "ended unexpectedly"
        self.rt.fatal(f"the scheduler's {name} task {reason}")
        loop = self.rt.loop
        if self._stopper is None and loop is not None and not loop.is_closed():
            self._stopper = loop.create_task(self._on_death(), name=PREFIX + "stop")

    async def stop(self, names: list[str], timeout: float) -> None:
        """End these tasks: wait up to ``timeout`` for them to finish, then cancel them."""
        tasks = [self.tasks[n] for n in names if n in self.tasks]
        if not tasks:
            return
        _, stuck = await asyncio.wait(tasks, timeout=timeout)
        for task in stuck:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def cancel_all(self) -> None:
        """Cancel every task still running and wait for them."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def reset(self) -> None:
        self._stopper = None
