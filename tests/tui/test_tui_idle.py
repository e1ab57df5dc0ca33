"""Quiet when idle: countdowns tick in place, nothing is re-read while nothing changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from goalsui.scheduler.runtime import did_something
from goalsui.service import Service
from goalsui.store.claims import ClaimResult, RecoveryResult
from goalsui.tui.app import make_app
from goalsui.tui.fmt import countdown
from goalsui.tui.idle import StampGate
from goalsui.tui.widgets.status_bar import StatusBar
from tests.tui_kit import PULSE, settle, worker_intent


def test_countdowns_show_seconds_only_in_their_last_ten_minutes() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    at = [now + timedelta(seconds=s) for s in (42, 252, 599, 600, 1513, 3599, 3600, 11520)]
    assert [countdown(t, now) for t in at] == [
        "in 42s",
        "in 4m12s",
        "in 9m59s",
        "in 10m",
        "in 25m",
        "in 59m",
        "in 1h00m",
        "in 3h12m",
    ]
    assert countdown(now, now) == "due" and countdown(None, now) == "-"


def test_what_a_scheduler_step_announces() -> None:
    # only a step or a recovery that changed something (an idle step is silent: two idle
    # daemons would wake each other for ever)
    assert did_something(ClaimResult(released=[object()])) is True  # type: ignore[list-item]  # any outcome recorded counts
    assert did_something(RecoveryResult()) is False
    assert did_something(ClaimResult()) is False
    assert did_something(ClaimResult(fired=[{"id": 1}])) is True  # type: ignore[list-item]  # any fired item counts


def test_stamp_gate_lets_a_change_through_and_looks_again_after_a_while() -> None:
    gate = StampGate(every_s=3600)
    stamps = iter([(1, 2), (1, 2), (1, 3), (1, 3), None, None])
    read = lambda: next(stamps)  # noqa: E731
    assert gate.unchanged(read) is False  # first look
    assert gate.unchanged(read) is True
    assert gate.unchanged(read) is False  # the file changed
    assert gate.unchanged(read) is True
    assert gate.unchanged(read) is False  # no stamp (PostgreSQL): always look
    assert gate.unchanged(read) is False
    always = StampGate(every_s=0)
    assert always.unchanged(lambda: 1) is False and always.unchanged(lambda: 1) is False


def test_change_stamp_moves_with_a_write_and_only_then(demo: Service) -> None:
    first = demo.overview.change_stamp()
    assert first is not None and first == demo.overview.change_stamp()
    demo.threads.create("a change")
    assert demo.overview.change_stamp() != first


async def test_countdowns_tick_in_place_without_a_reread(demo: Service, clock) -> None:
    app = make_app(demo, clock=clock, scheduler=False, watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        timeline = app.main.timeline
        key = f"intent:{worker_intent(demo, PULSE, 'pulse')}"
        assert str(timeline.get_cell(key, "next")) == "in 1m00s"
        # the first look takes the stamp (and reads the fingerprint once); the fingerprint's
        # periodic look (every 15 s of real time) must not fall into the step below on a
        # slow machine: only the stamp decides there
        app.feed._stamp_gate.every_s = 3600
        app._poll_and_tick()
        await settle(app, pilot)
        updates, dash, status = (
            timeline._update_count,
            app.dashboard,
            app.main.query_one("#status", StatusBar),
        )
        clock.advance(1)
        app._poll_and_tick()
        await pilot.pause()
        assert str(timeline.get_cell(key, "next")) == "in 59s"
        # and what is drawn says so (the row's cached renderables were dropped too)
        drawn = [timeline.render_line(y).text for y in range(timeline.region.height)]
        assert any("demo-pulse/pulse" in line and "in 59s" in line for line in drawn), drawn
        assert timeline._update_count == updates  # the table was not invalidated as a whole
        assert app.dashboard is dash and app.feed.refresh_timer is None  # nothing re-read
        assert "refreshed 0s ago" in status.render().plain
        demo.threads.create("now something changed")  # another write: the stamp moves
        app._poll_and_tick()
        await settle(app, pilot)
        assert app.dashboard is not dash


def test_next_visible_change_waits_for_the_next_countdown_turn() -> None:
    from goalsui.tui.idle import next_visible_change

    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

    def after(*seconds: float, every_second: bool = False) -> float:
        runs = [now + timedelta(seconds=s) for s in seconds]
        return (next_visible_change(runs, now, every_second=every_second) - now).total_seconds()

    assert after() == 60  # nothing counts down: look again in a minute
    assert after(300) == 1  # seconds shown: every second
    assert after(1513.5) == 13.5  # "in 25m" turns to "in 24m" in 13.5 s
    assert after(1513.5, 7200 + 20) == 13.5
    assert after(90000 + 125) == 60  # days away: the hour turns later than a minute
    assert after(-5) == 60  # "due" stays "due"
    assert after(1513.5, every_second=True) == 1  # a stopwatch or an age on screen
    assert (next_visible_change([None], now, every_second=False) - now).total_seconds() == 60
