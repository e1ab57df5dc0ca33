"""Every size works: tabs with fewer panes below 120 columns, and m maximises the
focused pane and brings the layout back."""

from __future__ import annotations

from textual.widgets import Tab

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.widgets.tab_bar import TabBar
from tests.tui_kit import settle


def shown(app, pane: str) -> bool:
    widget = app.main.query_one(f"#{pane}-pane")
    return widget.region.area > 0


async def test_narrow_screens_use_tabs(demo: Service, clock) -> None:
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        main = app.main
        assert main.has_class("-narrow") and main.query_one(TabBar).display
        assert shown(app, "goals") and shown(app, "detail")
        assert not shown(app, "failed") and not shown(app, "timeline")
        await pilot.press("4")
        await settle(app, pilot)
        assert main.tab == "runs" and main.pane == "failed"
        assert shown(app, "failed") and shown(app, "timeline") and not shown(app, "goals")
        await pilot.press("2")
        await settle(app, pilot)
        assert main.tab == "threads" and shown(app, "threads") and not shown(app, "failed")
        await pilot.resize_terminal(160, 48)
        await settle(app, pilot)
        assert not main.has_class("-narrow")
        assert all(shown(app, p) for p in ("goals", "threads", "timeline", "failed", "detail"))


async def test_a_wide_start_builds_the_tab_bar_when_it_first_narrows(demo: Service, clock) -> None:
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        main = app.main
        assert not main.query(TabBar)  # nothing hidden is built on a wide start
        dash = main.dash
        assert dash is not None
        failed = len(dash.attention) + len(dash.disabled)
        await pilot.resize_terminal(100, 30)
        await settle(app, pilot)
        bar = main.query_one(TabBar)
        assert bar.display and bar.active == "tab-goals"
        labels = {TabBar.name_of(tab): str(tab.label) for tab in bar.query(Tab)}
        assert labels["runs"] == (f"Runs · ✗ {failed} failed" if failed else "Runs · none failed")
        assert labels["threads"].startswith("Threads · ") and labels["threads"].endswith(" open")
        await pilot.resize_terminal(160, 48)
        await settle(app, pilot)
        await pilot.resize_terminal(100, 30)
        await settle(app, pilot)
        assert len(main.query(TabBar)) == 1


async def test_m_maximises_the_focused_pane_and_back(demo: Service, clock) -> None:
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        main = app.main
        await pilot.press("3")
        await settle(app, pilot)
        await pilot.press("m")
        await settle(app, pilot)
        assert main.maximized is main.query_one("#timeline-pane")
        assert main.query_one("#timeline-pane").region.width == 160
        await pilot.press("m")
        await settle(app, pilot)
        assert main.maximized is None
        assert main.query_one("#timeline-pane").region.width < 160
