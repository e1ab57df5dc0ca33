"""Small terminals and slips of the hand: the Reports screen shows its branches at
80x24 and 100x30 (one pane at a time under the report list), ``m`` maximises on the
secondary screens, the footer keeps ``? Help``, ``q`` does not quit a console that
hosts the scheduler on one press, and escape in the compose box leaves the box, not
the screen.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.records import ThreadsScreen
from goalsui.tui.screens.reports import ReportsScreen
from goalsui.tui.widgets.branches_pane import BranchesPane
from goalsui.tui.widgets.keyed_table import KeyedTable
from tests.base_kit import FakeClock
from tests.tui.test_tui_branches import DOCS, FIX, night_scene
from tests.tui_kit import screen_as, screen_text, settle, wait_for

SIZES = [(80, 24), (100, 30)]


@pytest.fixture
def night(tmp_path: Path) -> Iterator[tuple[Service, FakeClock]]:
    clock = FakeClock(datetime(2026, 12, 2, 8, 0, tzinfo=UTC))
    service, _goal_id, _repo = night_scene(tmp_path, clock)
    yield service, clock
    service.close()


def visible_rows(table) -> int:
    """Body rows of a DataTable that fit in its visible region (header excluded)."""
    region = table.content_region
    if not table.display or region.height <= 0 or not table.screen.find_widget(table):
        return 0
    return min(table.row_count, region.height - (1 if table.show_header else 0))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_reports_show_two_branch_rows_and_m_maximises(night, size) -> None:
    service, clock = night
    app = make_app(service, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("M")
        await settle(app, pilot)
        screen_as(app, ReportsScreen)
        table = app.screen.query_one(BranchesPane).query_one("#branches-table", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 2, what="the two branches")
        await pilot.press("3")  # the branches pane (stacked layout: one pane at a time)
        await settle(app, pilot)
        assert app.screen.focused is table
        assert visible_rows(table) >= 2
        text = screen_text(app)
        for branch in (FIX, DOCS):
            assert branch.removeprefix("nightshift/") in text
        assert "? Help" in text and "q Back" in text
        await pilot.press("m")
        await settle(app, pilot)
        assert app.screen.maximized is app.screen.query_one(BranchesPane)
        await pilot.press("m")
        await settle(app, pilot)
        assert app.screen.maximized is None
        await pilot.press("2")  # the report again
        await settle(app, pilot)
        assert app.screen.query_one("#reports-doc").display


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_footer_keeps_help_and_quit(demo, clock, size) -> None:
    from tests.tui_kit import PULSE

    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        app.main.goals.select_key(f"worker/{PULSE}/flaky")  # a worker: the most keys
        await settle(app, pilot)
        for pane in ("1", "3", "4", "5"):
            await pilot.press(pane)
            await settle(app, pilot)
            text = screen_text(app)
            assert "? Help" in text, pane
            assert "q Quit" in text, pane


async def test_q_asks_first_while_the_scheduler_is_hosted(demo, clock) -> None:
    app = make_app(demo, scheduler=True, watch=False, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await wait_for(pilot, lambda: app.runtime.scheduler is not None, what="the scheduler")
        await pilot.press("q")
        await settle(app, pilot)
        assert app.is_running and app.return_value is None
        assert "press q again" in screen_text(app)  # said on the notice line
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value is not None, what="the console to quit")
    assert app.return_value == 0


async def test_escape_in_the_compose_box_leaves_the_box_not_the_screen(demo, clock) -> None:
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("T")
        await settle(app, pilot)
        screen_as(app, ThreadsScreen)
        await pilot.press("c")
        await settle(app, pilot)
        assert app.screen.focused is not None and app.screen.focused.id == "compose-input"
        await pilot.press("q", "escape")  # q is text here; escape leaves the box
        await settle(app, pilot)
        screen_as(app, ThreadsScreen)
        assert app.screen.focused is not None and app.screen.focused.id == "threads-list"
        await pilot.press("escape")  # now it goes back
        await settle(app, pilot)
        assert app.screen is app.main


async def test_runs_screen_lists_newest_first_filters_and_retries(demo, clock) -> None:
    from datetime import timedelta

    from goalsui.tui.screens.runs import RunsScreen
    from tests.tui_kit import PULSE, add_run, worker_intent

    flaky, pulse = worker_intent(demo, PULSE, "flaky"), worker_intent(demo, PULSE, "pulse")
    now = clock()
    ok = add_run(demo, pulse, "ok", now - timedelta(minutes=9))
    failed = add_run(demo, flaky, "failed", now - timedelta(minutes=5), reason="exit 1")
    newest = add_run(demo, pulse, "ok", now - timedelta(minutes=1))
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("U")
        await settle(app, pilot)
        screen = screen_as(app, RunsScreen)
        assert screen.query_one(KeyedTable).row_keys()[:3] == [
            f"run:{newest}",
            f"run:{failed}",
            f"run:{ok}",
        ]
        await pilot.press("v", "v")  # all -> running -> failed
        await settle(app, pilot)
        assert screen.query_one(KeyedTable).row_keys() == [f"run:{failed}"]
        assert "flaky" in screen_text(app)
        await pilot.press("R")
        await settle(app, pilot)
        intent = demo.intents.get(flaky)
        assert intent.pending_trigger == "retry" and intent.next_run_at <= clock()
