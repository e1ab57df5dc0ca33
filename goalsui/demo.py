"""What ``goalsui demo`` adds for newcomers: demo records (a thread with todos, a
reminder, an empty heartbeat), last night of the sample nightshift replayed, and a nightshift on a
scratch git repository with one night replayed."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.bundled import find_sample_kb
from goalsui.domain.records import saved_id
from goalsui.domain.timeutil import MovingClock
from goalsui.errors import KBError
from goalsui.kb.layout import copy_sample_kb
from goalsui.kb.repo import Repo
from goalsui.kb.yamlio import load_yaml_mapping

if TYPE_CHECKING:
    from goalsui.service import Service

DEMO_FILE = "demo_records.yaml"
NIGHTSHIFT = "nightshift-"
BACKLOG = """# Backlog of the demo repository

- worker-1: Write the installation section of the README
- worker-2: List the open questions about the parser
"""
_IDENTITY = ("-c", "user.name=goalsui demo", "-c", "user.email=demo@goalsui.invalid")


def load_demo_records(service: Service) -> dict[str, int]:
    """Load ``demo_records.yaml`` through the service (idempotent: keys and titles reused)."""
    from goalsui.domain.intent_spec import IntentSpec

    path = service.kb.root / DEMO_FILE
    if not path.is_file():
        path = find_sample_kb() / DEMO_FILE
    data, _ = load_yaml_mapping(path, path.name)
    threads: dict[str, int] = {}
    counts = {"threads": 0, "todos": 0, "intents": 0}
    for spec in data.get("threads") or []:
        if not isinstance(spec, dict) or not spec.get("title"):
            raise KBError(path.name, "each thread needs a title")
        existing = service.threads.find(spec["title"])
        if existing is not None:
            threads[spec["title"]] = saved_id(existing)
            continue
        thread = service.threads.create(spec["title"], private=bool(spec.get("private")))
        threads[spec["title"]] = saved_id(thread)
        counts["threads"] += 1
        for todo in spec.get("todos") or []:
            service.todos.add(saved_id(thread), todo["text"], done=bool(todo.get("done")))
            counts["todos"] += 1
        for message in spec.get("messages") or []:
            service.threads.post(
                message["content"], thread_id=thread.id, role=message.get("role", "user")
            )
    for spec in data.get("intents") or []:
        intent = IntentSpec.parse(
            title=spec["title"],
            instruction=spec.get("instruction", ""),
            kind=spec.get("kind", "cron"),
            schedule=spec.get("cron") or spec.get("every") or spec.get("at"),
            timezone=spec.get("timezone", "UTC"),
            thread_id=threads.get(spec.get("thread", "")),
            operation_key=spec.get("operation_key"),
            checklist=spec.get("checklist"),
            event_source=spec.get("source"),
        )
        service.intents.save(intent)
        counts["intents"] += 1
    return counts


def make_demo_kb(target: Path | None = None) -> Path:
    """Copy the sample KB to a scratch folder and return it."""
    base = Path(target) if target else Path(tempfile.mkdtemp(prefix="goalsui-demo-"))
    return copy_sample_kb(base / "kb")


def replay_last_night(
    open_at: Callable[[Callable[[], datetime]], Service], now: datetime
) -> list[tuple[str, str]]:
    """Run the sample nightshift from the start of its last full night up to ``now``."""
    from goalsui.domain.nightshift import night_of, night_window
    from goalsui.scheduler.replay import drive

    clock = MovingClock(now)
    service = open_at(clock)
    try:
        goal_id = next((g for g in service.kb.goal_ids() if g.startswith(NIGHTSHIFT)), None)
        if goal_id is None:
            return []
        workers = service.kb.load_goal(goal_id).workers.values()
        reporter = (w for w in workers if w.runner and w.runner.builtin == "report")
        zone = next((w.schedule.timezone for w in reporter), "UTC")
        # From the start of the last whole night (the one before the night ``now`` is
        # in, whose report is written by now), up to now: nothing is left overdue.
        clock.now = night_window(night_of(now, zone) - timedelta(days=1), zone)[0]
        service.index.sync([goal_id])  # its workers are planned from the night's start
        return asyncio.run(drive(service, clock, goal_id, now))
    finally:
        service.close()


def make_scratch_repo(path: Path) -> Repo:
    """A git repository with one commit on ``main``."""
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.git("init", "-q", "-b", "main")
    (path / "README.md").write_text("# demo project\n\nA scratch repository for goalsui demo.\n")
    repo.git("add", "README.md")
    repo.git(*_IDENTITY, "commit", "-q", "-m", "initial commit")
    return repo


def replay_repo_night(
    open_at: Callable[[Callable[[], datetime]], Service], now: datetime, scratch: Path
) -> list[tuple[str, str]]:
    """Create the repo and the goal, then replay the night before ``now``."""
    from goalsui.domain.nightshift import night_of, night_window
    from goalsui.scheduler.replay import replay_window

    tz = "Europe/Berlin"
    repo = make_scratch_repo(scratch / "repo")
    clock = MovingClock(now)
    service = open_at(clock)
    try:
        view = service.nightshift.init(
            repo.path,
            base="main",
            tz=tz,
            runner={"command": ["{python}", "-m", "goalsui.demo_agent"]},
            workers=2,
            name="Nightshift on a demo repository",
        )
        (service.kb.goal_dir(view.goal_id) / "backlog.md").write_text(BACKLOG)
        # the last whole night: the one before the night ``now`` is in
        start, end = night_window(night_of(now, tz) - timedelta(days=1), tz)
        return asyncio.run(replay_window(service, clock, view.goal_id, start, end))
    finally:
        service.close()
