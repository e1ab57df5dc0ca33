"""Helpers for the console tests: a demo-loaded service, runs in the database, settling."""

from __future__ import annotations

import asyncio
import html
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlmodel import select
from textual.worker import WorkerState

from goalsui.demo import load_demo_records
from goalsui.domain.models import Goal, IntentRun
from goalsui.service import Service

REPO = Path(__file__).resolve().parent.parent
PULSE = "demo-pulse-05c0f5ca"
NIGHT = "nightshift-979afc6e"
#: Worker groups that never finish on their own.
ENDLESS = {"watch", "scheduler"}


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
        service.run_log_path(run_id).write_text(output, encoding="utf-8")  # type: ignore[arg-type]
    service.changed("runs")
    return run_id  # type: ignore[return-value]


def worker_intent(service: Service, goal_id: str, worker: str) -> int:
    return service.worker_intent(goal_id, worker).id  # type: ignore[return-value]


async def settle(app: Any, pilot: Any, rounds: int = 2, timeout: float = 10.0) -> None:
    """Let messages and finite workers finish (a few rounds: workers start workers)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    quiet = 0
    while quiet < rounds:
        await pilot.pause()
        busy = [
            w
            for w in app.workers
            if w.group not in ENDLESS and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        ]
        if busy:
            quiet = 0
            if loop.time() > deadline:
                raise TimeoutError(f"workers still busy: {busy}")
            await asyncio.sleep(0.01)
        else:
            quiet += 1


async def wait_for(
    pilot: Any, predicate: Any, timeout: float = 10.0, what: str = "condition"
) -> None:
    """Poll ``predicate()`` while the app runs (for watcher-driven changes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def label(node: Any) -> str:
    return node.label.plain


def screen_text(app: Any) -> str:
    """Everything on screen as text (for assertions on what the operator sees)."""
    svg = app.export_screenshot()
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")
