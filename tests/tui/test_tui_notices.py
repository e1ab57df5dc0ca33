"""Notifications never cover the work: the notice line and the event log get every one,
and no toast is ever drawn over a pane, at any size."""

from __future__ import annotations

from datetime import timedelta

import pytest
from textual.widgets._toast import Toast

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.records import JournalScreen
from goalsui.tui.widgets.status_bar import NoticeBar
from tests.tui_kit import PULSE, add_run, screen_as, screen_text, settle, worker_intent


def toasts(app) -> list[Toast]:
    return list(app.screen.query(Toast))


def overlaps(app, toast: Toast) -> list[str]:
    main = app.main
    return [
        pane
        for pane in ("#failed-pane", "#detail-pane")
        if toast.region.overlaps(main.query_one(pane).region)
    ]


async def burst(app, pilot) -> None:
    app.notify("the probe failed: exit 3", title="Run failed", severity="warning")
    app.notify("pulse: done for run 7\nJ: go there", title="Result")
    app.notify("upstream unreachable", title="Alert", severity="error")
    await settle(app, pilot)


@pytest.mark.parametrize("size", [(160, 48), (100, 30), (80, 24)])
async def test_notices_go_to_the_notice_line_never_to_a_toast(demo: Service, clock, size) -> None:
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(app, pilot)
        await burst(app, pilot)
        assert [t for t in toasts(app) if overlaps(app, t)] == []
        assert toasts(app) == []
        assert [n.title for n in app.notices][-3:] == ["Run failed", "Result", "Alert"]
        bar = app.main.query_one(NoticeBar)
        assert bar.notice is app.notices[-1]
        assert "Alert: upstream unreachable" in screen_text(app)
        await pilot.press("L")
        await settle(app, pilot)
        assert isinstance(app.screen, JournalScreen)
        text = screen_text(app)
        assert "Alert" in text and "Run failed" in text and "console" in text


async def test_newest_failure_is_selected_and_detail_shows_its_whole_error(
    demo: Service, clock
) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    long = "upstream https://api.example.com/v2/inventory answered 503 Service Unavailable after 3 retries (circuit open)"
    add_run(demo, intent_id, "failed", clock.now - timedelta(hours=2), reason="older: exit 1")
    newest = add_run(
        demo, intent_id, "failed", clock.now - timedelta(minutes=5), reason=long + "\nsecond line"
    )
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        main = app.main
        items = sorted(main.failed.items.values(), key=lambda i: i.when, reverse=True)
        assert items, "the demo has failures"
        assert main.failed.selected_item() == items[0] and items[0].run_id == newest
        first_line = items[0].error.splitlines()[0]
        text = " ".join(screen_text(app).split())
        words = " ".join(first_line.split())
        assert words == long
        detail = main.detail.shown[1]  # what the Detail pane shows (wrapped on screen)
        assert long in detail
        assert all(word in text for word in long.split())


async def test_a_failed_worker_is_reported_once_on_one_line(demo: Service, clock) -> None:
    """Workers do not report their own errors: the one Worker.StateChanged handler does,
    on the notice line and in the event log, sanitised, without a traceback; a worker of a
    screen is reported the same way as one of the app."""
    app = make_app(demo, scheduler=False, watch=False, clock=clock)

    def broken(*args: object) -> None:
        raise RuntimeError("disk [b]on[/b] fire\n  at line 3\x1b[31m")

    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        before = len(app.notices)
        app.act("never said", broken)
        await settle(app, pilot)
        (notice,) = list(app.notices)[before:]
        assert (notice.title, notice.severity) == ("Action failed", "error")
        assert notice.message == "RuntimeError: disk [b]on[/b] fire at line 3"
        assert "disk [b]on[/b] fire" in app.main.query_one(NoticeBar).notice.one_line
        await pilot.press("L")
        await settle(app, pilot)
        journal = screen_as(app, JournalScreen)
        journal.fetch = broken  # type: ignore[method-assign, assignment]  # its read fails
        journal.reload()
        await settle(app, pilot)
        assert [n.title for n in app.notices][-1] == "Reading the records failed"
        assert "disk [b]on[/b] fire" in screen_text(app)
