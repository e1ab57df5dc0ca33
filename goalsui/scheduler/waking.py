"""Waking on other processes' changes: PostgreSQL ``NOTIFY``, or on SQLite a bell in the
wake folder (:mod:`goalsui.store.doorbell`), with the wake file watched by ``watchfiles``
as the fallback (see docs/architecture.md, "Waking").

While one of them is live, an idle scheduler does not poll the database: it sleeps
until the soonest due time or ``IDLE_CAP``. Without either it polls every
``poll_interval``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from goalsui.scheduler.runtime import Runtime, describe
from goalsui.scheduler.tuning import IDLE_CAP
from goalsui.store import doorbell, wakefile

log = logging.getLogger("goalsui.scheduler")

#: ms: how often the watcher thread looks for changes (a wake arrives 1-2 steps late);
#: each look takes the GIL, so an idle scheduler pays for it.
WATCH_STEP_MS = 150


class CrossProcessWake:
    """Hears other processes' changes; :attr:`live` while it does."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.live = False
        self._unlisten: object = None
        self._folder: Path | None = None
        self._bell: doorbell.Bell | None = None
        self._stop = asyncio.Event()

    async def start(self) -> None:
        """Listen (PostgreSQL) or prepare the wake folder (SQLite)."""
        self._stop = asyncio.Event()
        service = self.rt.service
        if service.changes.across_processes:
            # The callback runs in the listener's thread.
            try:
                self._unlisten = await asyncio.to_thread(
                    service.changes.listen, lambda _what: self.rt.wake(), wait=2.0
                )
                self.live = True
            except Exception as exc:  # noqa: BLE001 - polling still works
                log.warning("cannot listen for other processes' changes: %s", exc)
            return
        folder = wakefile.wake_dir(service.store.engine)
        if folder is None:
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("cannot watch for other processes' changes (%s): polling", exc)
            return
        self._folder = folder
        self.live = True
        bell = doorbell.Bell(folder)
        try:
            sock = bell.open()
        except OSError as exc:
            log.info("no bell in %s (%s): watching the wake file", folder, exc)
            return
        assert self.rt.loop is not None
        try:
            self.rt.loop.add_reader(sock.fileno(), self._on_ring)
        except (NotImplementedError, RuntimeError) as exc:  # a loop without readers
            log.info("cannot wait on a bell (%s): watching the wake file", exc)
            bell.close()
            return
        self._bell = bell

    def _on_ring(self) -> None:
        """The bell's socket is readable (UI-less loop callback): wake unless only our own
        changes rang."""
        bell = self._bell
        if bell is None:
            return
        own = self.rt.service.origin
        if any(origin != own for origin in bell.origins()):
            self.rt.wake()

    async def stop(self) -> None:
        """Stop listening (the watcher task ends by itself once told)."""
        self._stop.set()
        bell, self._bell = self._bell, None
        if bell is not None and bell.sock is not None:
            assert self.rt.loop is not None
            self.rt.loop.remove_reader(bell.sock.fileno())
            bell.close()
        unlisten, self._unlisten = self._unlisten, None
        if callable(unlisten):
            try:
                await asyncio.to_thread(unlisten)
            except Exception as exc:  # noqa: BLE001 - stopping anyway
                log.debug("stopping the change listener: %s", exc)
        self.live = False

    async def run(self) -> None:
        """The ``wake-watch`` task: with a bell, just wait (its reader wakes the
        scheduler); without, wake the scheduler when another process wrote the wake file;
        if watching fails, say so and fall back to polling."""
        folder = self._folder
        if folder is not None and self._bell is None:
            try:
                await self._watch(folder)
            except Exception as exc:  # noqa: BLE001 - polling still works
                log.warning("watching %s failed (%s): polling instead", folder, describe(exc))
                self.live = False
        await self._stop.wait()

    async def _watch(self, folder: Path) -> None:
        from watchfiles import awatch

        own = self.rt.service.origin
        async for changes in awatch(
            folder,
            watch_filter=None,
            step=WATCH_STEP_MS,
            # the watcher thread hands back to the loop only on a change or every
            # IDLE_CAP (stopping is still noticed within a step)
            rust_timeout=int(IDLE_CAP * 1000),
            stop_event=self._stop,
            recursive=False,
        ):
            mine = any(Path(path).name == wakefile.FILE_NAME for _, path in changes)
            if mine and wakefile.read_origin(folder) != own:
                self.rt.wake()
