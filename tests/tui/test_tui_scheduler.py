"""The scheduler in the console's loop: a real run goes live, shows, and quitting asks first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.modals import ConfirmScreen
from goalsui.tui.widgets.status_bar import StatusBar
from tests.tui_kit import PULSE, label, open_demo, screen_as, settle, wait_for, worker_intent

SLOW = """schedule:
  every: 1m
runner:
  command: ["sh", "-c", "cat >/dev/null; echo started-the-slow-run; sleep 30"]
timeout: 5m
"""


@pytest.fixture
def demo(tmp_path: Path, clock, template: Path) -> Iterator[Service]:
    service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    (service.kb.root / PULSE / "workers" / "flaky" / "definition.yaml").write_text(SLOW)
    service.index.sync([PULSE])
    yield service
    service.close()


async def test_live_run_then_quit_asks_and_stops_it(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    app = make_app(demo, scheduler=True, watch=False, clock=clock)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot)
        await wait_for(
            pilot, lambda: app.runtime.scheduler_state == "running", what="scheduler running"
        )
        main = app.main
        main.goals.select_key(f"worker/{PULSE}/flaky")
        await settle(app, pilot)
        await pilot.press("r")
        node = main.goals.child_nodes[f"worker/{PULSE}/flaky"]
        await wait_for(pilot, lambda: "▶ running" in label(node), what="running indicator")
        assert "running" in label(main.goals.goal_nodes[PULSE])
        assert main.query_one(StatusBar).info.running == 1
        # the detail pane tails the live output (its last tab)
        await wait_for(
            pilot, lambda: main.detail.tabs[-1].label == "▶ live output", what="live tab"
        )
        await pilot.press("5")
        await wait_for(pilot, lambda: main.pane == "detail", what="the detail pane focused")
        await pilot.press("left_square_bracket")
        await wait_for(
            pilot,
            lambda: "started-the-slow-run" in main.detail.shown[1],
            timeout=15,
            what="live output",
        )
        await pilot.press("q")
        await settle(app, pilot)
        assert screen_as(app, ConfirmScreen).focused.id == "no"
        await pilot.press("n")
        await settle(app, pilot)
        assert app.is_running and app.runtime.live_runs() == 1
        await pilot.press("q")
        await settle(app, pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, timeout=30, what="exit")
    runs = demo.runs.list(intent_id=intent_id)
    assert runs and runs[0].status in ("cancelled", "interrupted", "failed")
    assert runs[0].finished_at is not None
    assert demo.intents.get(intent_id).status != "firing"


async def test_x_stops_the_running_run_and_the_schedule_goes_on(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    app = make_app(demo, scheduler=True, watch=False, clock=clock)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot)
        await wait_for(
            pilot, lambda: app.runtime.scheduler_state == "running", what="scheduler running"
        )
        main = app.main
        main.goals.select_key(f"worker/{PULSE}/flaky")
        await settle(app, pilot)
        assert not app.screen.check_action("stop_run", ())  # nothing runs yet
        await pilot.press("r")
        node = main.goals.child_nodes[f"worker/{PULSE}/flaky"]
        await wait_for(pilot, lambda: "▶ running" in label(node), what="running indicator")
        await wait_for(pilot, lambda: main.check_action("stop_run", ()), what="x enabled")
        await pilot.press("x")
        await settle(app, pilot)
        assert "schedule goes on" in screen_as(app, ConfirmScreen).detail
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: demo.runs.list(intent_id=intent_id)[0].status == "cancelled",
            timeout=30,
            what="the run recorded cancelled",
        )
        run = demo.runs.list(intent_id=intent_id)[0]
        assert run.finished_at is not None and "stopped by the operator" in (run.reason or "")
        await wait_for(
            pilot, lambda: demo.intents.get(intent_id).status == "active", what="intent active"
        )
        intent = demo.intents.get(intent_id)
        assert intent.next_run_at is not None and intent.pending_trigger is None
        assert "stop requested" in " ".join(j.action for j in demo.journal.recent())
