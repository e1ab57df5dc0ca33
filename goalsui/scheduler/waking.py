"""Waking on other processes' changes: one way per engine, PostgreSQL ``NOTIFY`` or on
SQLite a bell in the wake folder (:mod:`goalsui.store.doorbell`); see
docs/architecture.md, "Waking".

While it is live, an idle scheduler does not poll the database: it sleeps until the
soonest due time or ``IDLE_CAP``. Without it (no listener, no bell) it polls every
``poll_interval``.
"""

from __future__ import annotations

import asyncio
import logging

from goalsui.scheduler.runtime import Runtime
from goalsui.store import doorbell

log = logging.getLogger("goalsui.scheduler")


class CrossProcessWake:
    """Hears other processes' changes; :attr:`live` while it does."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.live = False
        self._unlisten: object = None
        self._bell: doorbell.Bell | None = None

    async def start(self) -> None:
        """Listen (PostgreSQL) or bind a bell in the wake folder (SQLite)."""
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
        folder = doorbell.wake_dir(service.store.engine)
        if folder is None:
            return
        bell = doorbell.Bell(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            sock = bell.open()
        except OSError as exc:
            log.warning("no bell in %s (%s): polling for other processes' changes", folder, exc)
            return
        assert self.rt.loop is not None
        try:
            self.rt.loop.add_reader(sock.fileno(), self._on_ring)
        except (NotImplementedError, RuntimeError) as exc:  # a loop without readers
            log.warning("cannot wait on a bell (%s): polling for other processes' changes", exc)
            bell.close()
            return
        self._bell = bell
        self.live = True

    def _on_ring(self) -> None:
        """The bell's socket is readable (UI-less loop callback): wake unless only our own
        changes rang."""
        bell = self._bell
        if bell is None:
            return
        own = self.rt.service.changes.origin
        if any(origin != own for origin in bell.origins()):
            self.rt.wake()

    async def stop(self) -> None:
        """Stop listening."""
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
