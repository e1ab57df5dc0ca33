"""Notifications: a finished result with something to say, and every alert.

A private thread's result is announced as a link (its id and title), never with its
words. A :class:`Notifier` listens to one scheduler. For each run that ended ``ok`` and posted
a message (a silent run, or one with no output, never notifies) and for each alert it
builds a :class:`Notice` naming the thread or the goal, hands it to the host (the
console shows a toast that jumps there on a key) and, when ``notify:`` is set in
goalsui.yaml, runs that command with the notice as JSON on stdin (10 s at most; a
failing command is journalled, never raised).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.runners.alerts import run_alert_command
from goalsui.runners.deliver import headline

if TYPE_CHECKING:
    from goalsui.scheduler.events import SchedulerEvent
    from goalsui.scheduler.loop import Scheduler
    from goalsui.service import Service


log = logging.getLogger("goalsui.notices")


@dataclass(frozen=True)
class Notice:
    """One notification: what happened, and the thread or goal it belongs to."""

    kind: str  # result | alert
    where: str  # the thread's title, or goal/worker
    text: str  # one line: the result's headline or the alert
    intent_id: int | None = None
    run_id: int | None = None
    thread_id: int | None = None
    goal_id: str | None = None
    worker: str | None = None
    at: datetime | None = None
    #: a private thread's notice: ``text`` is only a link to the thread, never its words
    private: bool = False

    @property
    def target(self) -> str | None:
        """``thread:<id>`` or ``goal:<id>``: where the console jumps."""
        if self.thread_id is not None:
            return f"thread:{self.thread_id}"
        if self.goal_id:
            return f"goal:{self.goal_id}"
        return None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["at"] = self.at.isoformat(timespec="seconds") if self.at else None
        data["target"] = self.target
        return data


def notice_for(service: Service, event: SchedulerEvent) -> Notice | None:
    """The notice for a scheduler event, or None (blocking: reads the database)."""
    if event.kind not in ("run-finished", "alert") or event.intent_id is None:
        return None
    if event.kind == "run-finished" and event.status != RunStatus.OK:
        return None  # silent, failed, skipped...: failures alert on their own rule
    private = False
    try:
        intent = service.intents.get(event.intent_id)
        where = (
            f"{intent.goal_id}/{intent.worker}" if intent.worker else plain(intent.title, limit=60)
        )
        if intent.thread_id is not None:
            thread = service.threads.get(intent.thread_id)
            where = plain(thread.title, limit=60)
            private = bool(thread.private)
        elif intent.goal_id and not intent.worker:
            where = intent.goal_id
        if event.kind == "alert":
            text = plain(event.message or event.title, limit=300)
        else:
            messages = service.threads.messages(
                intent.thread_id, goal_id=None if intent.thread_id else intent.goal_id, limit=20
            )
            posted = [m for m in messages if m.run_id == event.run_id]
            if not posted:
                return None  # nothing was said (no output): nothing to notify
            if private:  # the words stay in goalsui: the notice only points at the thread
                text = (
                    f"a new reply in private thread {intent.thread_id} “{where}”; read it "
                    f"with 'goalsui thread show {intent.thread_id}' or in the console"
                )
            else:
                text = headline(posted[-1].content, limit=200)
    except GoalsuiError:
        return None
    return Notice(
        kind="result" if event.kind == "run-finished" else "alert",
        where=where,
        text=text,
        intent_id=intent.id,
        run_id=event.run_id,
        thread_id=intent.thread_id,
        goal_id=intent.goal_id,
        worker=intent.worker,
        at=event.at or service.now(),
        private=private,
    )


class Notifier:
    """Turns one scheduler's events into notices for ``show`` and the ``notify:`` command."""

    def __init__(self, service: Service, show: Callable[[Notice], None] | None = None) -> None:
        self.service = service
        self.show = show
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(self, scheduler: Scheduler) -> Callable[[], None]:
        """Listen to ``scheduler`` (call on its loop); returns the unsubscribe function."""
        return scheduler.subscribe(self._on_event)

    def _on_event(self, event: SchedulerEvent) -> None:
        if event.kind not in ("run-finished", "alert"):
            return
        if event.kind == "run-finished" and event.status != RunStatus.OK:
            return
        task = asyncio.get_running_loop().create_task(self._handle(event))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, event: SchedulerEvent) -> None:
        try:
            notice = await asyncio.to_thread(notice_for, self.service, event)
            if notice is None:
                return
            if self.show is not None:
                self.show(notice)
            argv = self.service.config().notify
            if argv:
                await self.run_command(argv, notice)
        except Exception as exc:  # noqa: BLE001 - a notification never breaks the host
            log.warning("notification for intent %s failed: %s", event.intent_id, exc)

    async def run_command(self, argv: tuple[str, ...], notice: Notice) -> bool:
        """Run ``notify:`` with the notice as JSON on stdin; True when it exited 0."""
        payload = notice.as_json()
        return await run_alert_command(
            self.service, argv, payload, name="notify command", subject=notice.where
        )

    async def drain(self, timeout: float = 15.0) -> None:
        """Wait for the notices being handled (tests, and a host that stops)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
