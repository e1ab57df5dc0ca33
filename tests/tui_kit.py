"""Helpers for the console tests: a demo-loaded service, runs in the database, settling."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlmodel import select
from textual.app import App
from textual.screen import Screen
from textual.worker import WorkerState

from goalsui.demo import load_demo_records
from goalsui.service import Service
from goalsui.store.models import Goal, Intent, IntentRun

REPO = Path(__file__).resolve().parent.parent
PULSE = "demo-pulse-05c0f5ca"
NIGHT = "nightshift-979afc6e"
#: Worker groups that never finish on their own.
ENDLESS = {"watch", "scheduler"}
S = TypeVar("S", bound=Screen[Any])


def open_demo(kb: Path, state: Path, clock: Any, template: Path | None = None) -> Service:
    """A service on a copy of the sample KB with the demo records loaded.

    With ``template`` (see :func:`build_template`) the KB and database are copied from
    it, which is much faster than creating the schema and loading the records again.
    """
    if template is None:
        if not kb.exists():
            shutil.copytree(REPO / "sample_kb", kb)
        service = Service.open(kb, None, state, clock=clock, actor="operator")
        load_demo_records(service)
        return service
    shutil.copytree(template / "kb", kb)
    state.mkdir(parents=True, exist_ok=True)
    shutil.copy2(template / "state" / "goalsui.db", state / "goalsui.db")
    service = Service.open(kb, None, state, clock=clock, actor="operator", sync=False)
    with service.store.write() as s:
        for goal in s.exec(select(Goal)).all():
            goal.kb_path = str(service.kb.root / goal.goal_id)
            s.add(goal)
    return service


def build_template(root: Path, clock: Any) -> Path:
    """The demo KB and its database, built once per test session."""
    service = open_demo(root / "kb", root / "state", clock)
    service.close()
    return root


def add_run(
    service: Service,
    intent_id: int,
    status: str,
    started: datetime,
    *,
    seconds: float = 2,
    output: str = "",
    reason: str | None = None,
    planned: datetime | None = None,
    trigger: str = "schedule",
    exit_code: int | None = None,
) -> int:
    """Record a run the way the scheduler does (tests may reach the store)."""
    finished = None if status == "running" else started + timedelta(seconds=seconds)
    with service.store.write() as s:
        run = IntentRun(
            intent_id=intent_id,
            status=status,
            trigger=trigger,
            planned_at=planned or started,
            started_at=started,
            finished_at=finished,
            output_tail=output[-2000:] or None,
            reason=reason,
            exit_code=exit_code,
        )
        s.add(run)
        s.flush()
        run_id = run.id
    if output:
        service.runs.log_path(run_id).write_text(output, encoding="utf-8")
    service.changed("runs")
    return run_id


def auto_disable(service: Service, intent_id: int, error: str) -> None:
    """Leave an intent auto-disabled after five failures, as the scheduler does."""
    with service.store.write() as s:
        row = s.get(Intent, intent_id)
        row.status, row.consecutive_failures, row.last_error = "failed", 5, error
        s.add(row)


def worker_intent(service: Service, goal_id: str, worker: str) -> int:
    return service.workers.intent(goal_id, worker).id


def busy(app: Any) -> list[str]:
    """What the console is still doing; empty when it is quiet.

    Finite workers (records, plans, detail, actions, screen data; not the endless KB
    watch or scheduler), a refresh that is due or loading, and the first records not
    yet on screen (they load in a worker after the first paint).
    """
    doing = [
        f"worker {w.group}/{w.name}"
        for w in list(app.workers)
        if w.group not in ENDLESS and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
    ]
    feed, startup = getattr(app, "feed", None), getattr(app, "startup", None)
    if feed is not None and feed.refresh_timer is not None:
        doing.append("a refresh is due")
    if feed is not None and (feed.loading or feed.dirty):
        doing.append("the records are loading")
    if startup is not None and (startup.records_at is None or app.dashboard is None):
        doing.append("the first records are not shown yet")
    if startup is not None and app.service_ready and not startup.serving:
        doing.append("start-up steps wait for the first paint")
    return doing


async def drain(app: Any, pilot: Any) -> None:
    """Handle every message queued now: the app's, and every screen's in the stack.

    ``pilot.pause()`` only covers the screen on top; results for the main screen
    arrive while a modal or a records screen is shown, too.
    """
    await pilot.pause()
    nodes = [node for screen in app.screen_stack for node in screen.walk_children(with_self=True)]
    pending = [asyncio.Event() for _ in nodes]
    waiting = [e for node, e in zip(nodes, pending, strict=True) if node.call_later(e.set)]
    if waiting:
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in waiting)), 30)
        except TimeoutError:
            raise TimeoutError("queued messages were not handled within 30s") from None


async def settle(app: Any, pilot: Any, timeout: float = 30.0) -> None:
    """Wait until the console is quiet: nothing :func:`busy`, and every message handled.

    Quiet is checked on both sides of a full :func:`drain`: a worker that ended just
    before the first check has its result handled in the drain, and whatever that
    handling starts (a refresh, another worker) shows in the second check.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    quiet_before = False
    while True:
        await drain(app, pilot)
        doing = busy(app)
        if not doing and quiet_before:
            return
        quiet_before = not doing
        if loop.time() > deadline:
            raise TimeoutError(f"the console did not settle within {timeout:.0f}s: {doing}")


async def wait_for(
    pilot: Any, predicate: Any, timeout: float = 30.0, what: str = "condition"
) -> None:
    """Poll ``predicate()`` while the app runs (for watcher-driven and live changes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await pilot.pause(0.02)


async def watching(app: Any, pilot: Any, timeout: float = 30.0) -> None:
    """Wait until the console's KB watch reports changes, then settle.

    ``watcher.healthy`` is set when the watch starts, a moment before the OS watch is
    in place: a KB file is rewritten unchanged until a batch for it arrives.
    """
    await wait_for(
        pilot,
        lambda: app.runtime.watcher is not None and app.runtime.watcher.healthy,
        timeout,
        "the KB watcher to start",
    )
    watcher = app.runtime.watcher
    probe = watcher.root / PULSE / "protocol.md"
    seen = watcher.batches_seen
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while watcher.batches_seen == seen:
        if loop.time() > deadline:
            raise TimeoutError(f"the KB watcher reported no change within {timeout:.0f}s")
        probe.write_text(probe.read_text(encoding="utf-8"), encoding="utf-8")
        with contextlib.suppress(TimeoutError):  # not yet watching: write it again
            await wait_for(pilot, lambda: watcher.batches_seen > seen, 1.0, "a KB batch")
    await settle(app, pilot)


def screen_as(app: App[Any], kind: type[S]) -> S:
    """The app's current screen, which must be a ``kind`` (typed, unlike ``app.screen``)."""
    screen = app.screen
    assert isinstance(screen, kind), screen
    return screen


def label(node: Any) -> str:
    return node.label.plain


def screen_text(app: Any) -> str:
    """Everything on screen as text (for assertions on what the operator sees)."""
    svg = app.export_screenshot()
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")
