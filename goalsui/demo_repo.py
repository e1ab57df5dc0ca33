"""The demo's nightshift on a repository: a scratch git repo, one night replayed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.kb.repo import Repo

if TYPE_CHECKING:
    from goalsui.service import Service

BACKLOG = """# Backlog of the demo repository

- worker-1: Write the installation section of the README
- worker-2: List the open questions about the parser
"""
_IDENTITY = ("-c", "user.name=goalsui demo", "-c", "user.email=demo@goalsui.invalid")


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
    from goalsui.domain.timeutil import MovingClock
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
        night = night_of(now, tz) - timedelta(days=1)
        start, end = night_window(night, tz)
        return asyncio.run(replay_window(service, clock, view.goal_id, start, end))
    finally:
        service.close()
