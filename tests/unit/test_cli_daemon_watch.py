"""``goalsui daemon`` re-reads the KB index when a definition or the KB config changes on disk."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import SimpleNamespace

from goalsui.cli.daemon import _watch_kb


async def test_a_changed_definition_re_reads_its_goal_and_the_config_every_goal(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    worker = kb / "g1" / "workers" / "w"
    worker.mkdir(parents=True)
    (kb / "goalsui.yaml").write_text("")
    synced: asyncio.Queue[list[str] | None] = asyncio.Queue()

    def sync(goals: list[str] | None) -> list[object]:
        synced.put_nowait(goals)
        return []

    service = SimpleNamespace(kb=SimpleNamespace(root=kb), index=SimpleNamespace(sync=sync))
    task = asyncio.create_task(_watch_kb(service))
    try:
        for n in range(20):  # until the watch is in place
            (worker / "definition.yaml").write_text(f"n: {n}\n")
            with contextlib.suppress(TimeoutError):
                first = await asyncio.wait_for(synced.get(), 3)
                break
        assert first == ["g1"]
        (kb / "g1" / "state.yaml").write_text("a: 1\n")  # not a definition: no re-read
        (kb / "goalsui.yaml").write_text("theme: x\n")
        assert await asyncio.wait_for(synced.get(), 10) is None  # None: every goal
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
