"""Live KB: the watcher classifies real file events; the console re-reads and re-plans."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from goalsui.kb.watcher import BOX, CONFIG, FILE, GOAL, LOG, REPORT, WORKER, KBWatcher, classify
from goalsui.service import Service
from goalsui.tui.app import make_app
from tests.tui_kit import (
    PULSE,
    label,
    settle,
    wait_for,
    watching,
    worker_intent,
)

SIZE = (110, 36)


async def until(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate()`` on the running loop (no app here)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.02)


def test_classify_paths(tmp_path: Path) -> None:
    root = tmp_path
    (root / "g1").mkdir()
    cases = {
        "goalsui.yaml": (CONFIG, None, ""),
        "g1": (GOAL, "g1", ""),
        "g1/definition.yaml": (GOAL, "g1", "definition.yaml"),
        "g1/workers/w": (WORKER, "g1", "workers/w"),
        "g1/workers/w/definition.yaml": (WORKER, "g1", "workers/w/definition.yaml"),
        "g1/workers/w/prompt.md": (FILE, "g1", "workers/w/prompt.md"),
        "g1/workers/w/outbox/2026-12-02-7.md": (BOX, "g1", "workers/w/outbox/2026-12-02-7.md"),
        "g1/protocol.md": (FILE, "g1", "protocol.md"),
        "g1/state.yaml": (FILE, "g1", "state.yaml"),
        "g1/log/2026-12-02.md": (LOG, "g1", "log/2026-12-02.md"),
        "g1/reports/2026-12-02.md": (REPORT, "g1", "reports/2026-12-02.md"),
    }
    for rel, (kind, goal, goal_rel) in cases.items():
        change = classify(root, root / rel)
        assert change is not None, rel
        assert (change.kind, change.goal_id, change.rel) == (kind, goal, goal_rel), rel
    for ignored in (
        "g1/.prompt.md.x1y2.tmp",
        ".staging-g2-abc123/definition.yaml",
        ".trash-g1-abc/definition.yaml",
        "g1/workers/w/prompt.md~",
        "g1/workers/w/.prompt.md.swp",
        "demo_records.yaml",
        "g1/workers/w/__pycache__/tick.cpython-311.pyc",
    ):
        assert classify(root, root / ignored) is None, ignored


async def test_watcher_sees_an_atomic_replace_and_a_new_goal(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "g1" / "workers" / "w").mkdir(parents=True)
    prompt = root / "g1" / "workers" / "w" / "prompt.md"
    prompt.write_text("v1")
    watcher = KBWatcher(root, debounce_ms=50)
    batches = []

    async def collect() -> None:
        async for batch in watcher.batches():
            batches.append(batch)

    task = asyncio.create_task(collect())
    try:
        await until(lambda: watcher.healthy, "the watch to start")
        # The OS watch is set up a moment after awatch starts: write a file until it shows.
        probe = root / "g1" / "protocol.md"
        deadline = asyncio.get_running_loop().time() + 30
        while not batches:
            assert asyncio.get_running_loop().time() < deadline, "the watch reports nothing"
            probe.write_text("probe")
            with contextlib.suppress(TimeoutError):
                await until(lambda: bool(batches), "the probe", timeout=1)
        for n in range(2):
            # an editor save: temp file + os.replace, twice (the second is lost when
            # watching the file instead of its folder)
            start = len(batches)
            tmp = prompt.with_name(f".prompt.md.{n}.tmp")
            tmp.write_text(f"v{n + 2}")
            os.replace(tmp, prompt)

            def replaced(start: int = start) -> bool:
                return any(("g1", "workers/w/prompt.md") in b.files for b in batches[start:])

            await until(replaced, f"an event for replace {n + 1}")
        (root / "g2").mkdir()
        (root / "g2" / "definition.yaml").write_text("name: x\n")
        await until(lambda: any("g2" in b.goals_to_sync for b in batches), "the new goal")
        assert watcher.status == "ok"
    finally:
        watcher.stop()
        await asyncio.wait_for(task, 5)


async def test_prompt_edit_refreshes_the_detail_pane(demo: Service, clock) -> None:
    app = make_app(demo, scheduler=False, watch=True, clock=clock)
    prompt = demo.kb.root / PULSE / "workers" / "pulse" / "prompt.md"
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await watching(app, pilot)
        app.main.goals.select_key(f"worker/{PULSE}/pulse")
        await settle(app, pilot)
        assert app.main.detail.current.rel == "workers/pulse/prompt.md"
        tmp = prompt.with_name(".prompt.md.edit.tmp")
        tmp.write_text("# pulse\n\nNEW INSTRUCTIONS FROM THE OPERATOR\n")
        os.replace(tmp, prompt)
        await wait_for(
            pilot, lambda: "NEW INSTRUCTIONS" in app.main.detail.shown[1], what="detail refresh"
        )
        assert app.runtime.watcher_status() == "ok"


async def test_definition_edit_replans_the_countdown(demo: Service, clock) -> None:
    app = make_app(demo, scheduler=False, watch=True, clock=clock)
    definition = demo.kb.root / PULSE / "workers" / "pulse" / "definition.yaml"
    intent_id = worker_intent(demo, PULSE, "pulse")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await watching(app, pilot)
        node = app.main.goals.child_nodes[f"worker/{PULSE}/pulse"]
        assert "every 1m" in label(node) and "in 1m00s" in label(node)
        definition.write_text(definition.read_text().replace("every: 1m", "every: 5m"))
        await wait_for(pilot, lambda: "in 5m00s" in label(node), what="re-planned countdown")
        assert "every 5m" in label(node)
        assert demo.intents.get(intent_id).schedule == "5m"


async def test_broken_yaml_shows_a_badge_and_keeps_the_last_good_version(
    demo: Service, clock
) -> None:
    app = make_app(demo, scheduler=False, watch=True, clock=clock)
    definition = demo.kb.root / PULSE / "workers" / "flaky" / "definition.yaml"
    intent_id = worker_intent(demo, PULSE, "flaky")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await watching(app, pilot)
        definition.write_text("schedule:\n  every: 1m\n  bogus: [unclosed\n")
        goal_node = app.main.goals.goal_nodes[PULSE]
        await wait_for(pilot, lambda: "error in KB" in label(goal_node), what="error badge")
        toasts = [n for n in app.notices if n.title == "KB error"]
        assert toasts, "a notification names the file"
        message = toasts[-1].message
        assert "demo-pulse-05c0f5ca/workers/flaky/definition.yaml" in message and ":" in message
        intent = demo.intents.get(intent_id)
        assert (
            intent.status == "active" and intent.schedule == "1m"
        )  # the last good version runs on
        assert "flaky" in str(app.main.goals.child_nodes.get(f"worker/{PULSE}/flaky").label)
        # fixed again: the badge goes
        definition.write_text('schedule:\n  every: 1m\nrunner:\n  command: ["true"]\n')
        await wait_for(pilot, lambda: "error in KB" not in label(goal_node), what="badge gone")
        assert app.is_running


async def test_new_and_deleted_goals_appear_and_go(demo: Service, clock) -> None:
    import shutil

    app = make_app(demo, scheduler=False, watch=True, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await watching(app, pilot)
        demo_copy = demo.kb.root / "pulse-copy-0a0b0c0d"
        staging = demo.kb.root / ".staging-pulse-copy"
        shutil.copytree(demo.kb.root / PULSE, staging)
        text = (staging / "definition.yaml").read_text()
        (staging / "definition.yaml").write_text(text.replace(PULSE, "pulse-copy-0a0b0c0d"))
        os.rename(staging, demo_copy)
        goals = app.main.goals
        await wait_for(pilot, lambda: "pulse-copy-0a0b0c0d" in goals.goal_nodes, what="new goal")
        shutil.rmtree(demo.kb.root / "docs-review-bfb1526f")
        await wait_for(
            pilot, lambda: "docs-review-bfb1526f" not in goals.goal_nodes, what="goal gone"
        )
