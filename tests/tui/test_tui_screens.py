"""Failures, Reports, Events, Threads and the Event log screens, through the pilot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from goalsui.domain.nightshift import night_window
from goalsui.service import Service
from goalsui.store.models import Intent
from goalsui.tui.app import make_app
from goalsui.tui.screens.failures import FailuresScreen
from goalsui.tui.screens.output import OutputScreen
from goalsui.tui.screens.reports import ReportsScreen
from goalsui.tui.widgets.keyed_table import KeyedTable
from tests.tui_kit import (
    NIGHT,
    PULSE,
    add_run,
    auto_disable,
    screen_as,
    screen_text,
    settle,
    worker_intent,
)

SIZE = (110, 36)


async def test_failures_screen_one_key_each(demo: Service, clock) -> None:
    flaky = worker_intent(demo, PULSE, "flaky")
    pulse = worker_intent(demo, PULSE, "pulse")
    scout = worker_intent(demo, NIGHT, "scout")
    missed = add_run(
        demo,
        scout,
        "missed",
        clock.now - timedelta(hours=30),
        seconds=0,
        reason="overdue by more than 24h",
    )
    failed = add_run(
        demo, pulse, "failed", clock.now - timedelta(minutes=20), reason="exit 1", output="oops\n"
    )
    interrupted = add_run(
        demo, pulse, "interrupted", clock.now - timedelta(minutes=10), reason="lease expired"
    )
    auto_disable(demo, flaky, "flaky: upstream status endpoint unreachable")
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("F")
        await settle(app, pilot)
        screen = screen_as(app, FailuresScreen)
        table = screen.table
        # newest first
        assert table.row_keys() == [
            f"intent:{flaky}",
            f"run:{interrupted}",
            f"run:{failed}",
            f"run:{missed}",
        ]
        text = screen_text(app)
        assert "auto-disabled" in text and "upstream status endpoint unreachable" in text

        table.move_to_key(f"intent:{flaky}")
        await settle(app, pilot)
        await pilot.press("p")  # resume the auto-disabled intent
        await settle(app, pilot)
        assert demo.intents.get(flaky).status == "active"
        assert f"intent:{flaky}" not in table.row_keys()

        table.move_to_key(f"run:{missed}")
        await settle(app, pilot)
        await pilot.press("r")  # replay the missed occurrence
        await settle(app, pilot)
        assert demo.intents.get(scout).pending_trigger == "catch-up"
        assert demo.runs.get(missed).dismissed and f"run:{missed}" not in table.row_keys()

        table.move_to_key(f"run:{failed}")
        await settle(app, pilot)
        await pilot.press("R")  # retry the failed run's intent
        await settle(app, pilot)
        assert demo.intents.get(pulse).pending_trigger == "retry"

        table.move_to_key(f"run:{interrupted}")
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert demo.runs.get(interrupted).dismissed
        assert f"run:{interrupted}" not in table.row_keys()

        table.move_to_key(f"run:{failed}")
        await settle(app, pilot)
        await pilot.press("o")
        await settle(app, pilot)
        assert screen_as(app, OutputScreen).text == "oops\n"


def hold_for_review(service: Service, intent_id: int, run_id: int) -> None:
    """What recovery writes for an interrupted run of a ``review`` intent."""
    from goalsui.domain.interrupts import needs_review_error
    from goalsui.store.models import IntentRun

    with service.store.write() as s:
        run = s.get(IntentRun, run_id)
        run.needs_review = True
        s.add(run)
        row = s.get(Intent, intent_id)
        row.status, row.next_run_at = "paused", None
        row.last_error = needs_review_error(run_id, "lease expired")
        s.add(row)


async def test_failures_screen_decides_runs_that_need_review(demo: Service, clock) -> None:
    pulse = worker_intent(demo, PULSE, "pulse")
    scout = worker_intent(demo, NIGHT, "scout")
    retried = add_run(
        demo, pulse, "interrupted", clock.now - timedelta(minutes=10), reason="lease expired"
    )
    dismissed = add_run(
        demo, scout, "interrupted", clock.now - timedelta(minutes=5), reason="lease expired"
    )
    hold_for_review(demo, pulse, retried)
    hold_for_review(demo, scout, dismissed)
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("F")
        await settle(app, pilot)
        screen = screen_as(app, FailuresScreen)
        table = screen.table
        assert table.row_keys() == [f"run:{dismissed}", f"run:{retried}"]
        assert all(table.items[k].status == "needs review" for k in table.row_keys())
        table.move_to_key(f"run:{retried}")
        await settle(app, pilot)
        text = screen_text(app)
        assert text.count("needs review") >= 2
        assert "R retry: start it again now" in text and "d dismiss: resume the schedule" in text
        footer = {k: a.binding.description for k, a in screen.active_bindings.items()}
        assert footer.get("R") == "Retry" and footer.get("d") == "Dismiss"

        await pilot.press("R")
        await settle(app, pilot)
        intent = demo.intents.get(pulse)
        assert (intent.status, intent.pending_trigger) == ("active", "retry")
        assert demo.runs.get(retried).needs_review is False
        assert f"run:{retried}" not in table.row_keys()

        table.move_to_key(f"run:{dismissed}")
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        intent = demo.intents.get(scout)
        assert intent.status == "active" and intent.pending_trigger is None
        assert intent.next_run_at is not None and intent.next_run_at > clock.now
        assert demo.runs.get(dismissed).needs_review is False
        assert table.row_keys() == []


async def test_reports_screen_shows_the_report_beside_the_night(demo: Service, clock) -> None:
    """Old reports, named by their morning (2026-12-02.md for the night of the 1st), are
    listed under their night and shown beside that night's runs."""
    reports = demo.kb.root / NIGHT / "reports"
    (reports / "2026-12-01.md").write_text("# Morning report 2026-12-01\n\nAn older night.\n")
    (reports / "2026-12-02.md").write_text(
        "# Morning report 2026-12-02\n\n## Runs\n\n- scout ok (run 1)\n- gardener **failed** (run 2)\n"
        "\n## Timeline\n\n| worker | run | trigger | planned | started | duration | status | source |\n"
        "| --- | ---: | --- | --- | --- | ---: | --- | --- |\n"
        "| scout | 1 | schedule | 20:30:00 | 20:30:03 | 1m35s | ok | "
        "run 1, workers/scout/outbox/20261201T193000Z-1.md |\n"
    )
    start, end = night_window(datetime(2026, 12, 1).date(), "Europe/Berlin")
    scout = worker_intent(demo, NIGHT, "scout")
    gardener = worker_intent(demo, NIGHT, "gardener")
    planned = datetime(2026, 12, 1, 19, 30, tzinfo=UTC)  # 20:30 Berlin
    add_run(demo, scout, "ok", planned + timedelta(seconds=3), planned=planned, seconds=95)
    planned2 = datetime(2026, 12, 2, 4, 0, tzinfo=UTC)
    add_run(
        demo,
        gardener,
        "failed",
        planned2 + timedelta(minutes=4),
        planned=planned2,
        seconds=30,
        reason="exit 2",
    )
    add_run(demo, scout, "ok", end + timedelta(hours=1), seconds=5)  # after the night: not listed
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("M")
        await settle(app, pilot)
        screen = screen_as(app, ReportsScreen)
        reports_table = screen.query_one("#reports-list", KeyedTable)
        assert reports_table.row_keys()[0].endswith("reports/2026-12-02.md")  # newest first
        listed = [str(reports_table.get_row(k)[0]) for k in reports_table.row_keys()]
        assert listed[:2] == ["2026-12-01", "2026-11-30"]  # each under its night's start
        night = screen.query_one("#reports-night", KeyedTable)
        assert len(night.row_keys()) == 2
        rows = [[str(c) for c in night.get_row(k)] for k in night.row_keys()]
        assert rows[0][:5] == ["scout", "20:30", "20:30", "+3s", "1m35s"]
        assert rows[1][0] == "gardener" and rows[1][3] == "+4m00s" and "failed" in rows[1][5]
        text = screen_text(app)
        assert "Morning report 2026-12-02" in text
        # The eight-column timeline is wider than the pane: a list item, nothing cut to "…"
        assert "• scout: run 1 · trigger schedule ·" in text
        assert "workers/scout/outbox/20261201T193000Z-1." in text  # wrapped, not cut
        reports_table.move_cursor(row=1)
        await settle(app, pilot)
        assert "An older night" in screen_text(app)


async def test_reports_screen_stacks_its_panes_when_narrow(demo: Service, clock) -> None:
    """Below 140 cells the report goes under the night's runs, the full width; wider, the
    two sit side by side. Resizing switches between the two."""
    reports = demo.kb.root / NIGHT / "reports"
    (reports / "2026-12-02.md").write_text("# Morning report 2026-12-02\n\n" + "word " * 60 + "\n")
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("M")
        await settle(app, pilot)
        screen = app.screen
        left, doc = screen.query_one("#reports-left"), screen.query_one("#reports-doc")
        assert doc.region.y >= left.region.bottom and doc.region.width == 110
        assert left.region.width == 110  # the night table gets the width as well
        await pilot.resize_terminal(160, 48)
        await settle(app, pilot)
        assert doc.region.x >= left.region.right and doc.region.y == left.region.y
        assert doc.region.width >= 70
        await pilot.resize_terminal(120, 40)
        await settle(app, pilot)
        assert doc.region.y >= left.region.bottom and doc.region.width == 120


async def test_events_and_threads_screens_show_untrusted_text_plainly(demo: Service, clock) -> None:
    intent = demo.intents.create(
        title="Deploy watcher", kind="event", event_source="ci", instruction="look"
    )
    demo.events.emit(
        "ci", {"ref": "main", "note": "[bold red]not markup[/] \x1b[31mred\x1b[0m"}, "delivery-1"
    )
    thread = demo.threads.find("Visa application")
    demo.threads.post(
        "The consulate confirmed [link=http://evil]the slot[/link].",
        thread_id=thread.id,
        role="assistant",
        intent_id=intent.id,
        provenance="Came back about: Friday reminder",
    )
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("E")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Deploy watcher" in text  # which intents the event fired
        assert "[bold red]not markup[/]" in text  # shown literally, never as markup
        assert "\x1b" not in text
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("T")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Came back about: Friday reminder" in text
        # shown literally (the compose box below may make the line wrap after "the")
        assert "[link=http://evil]the" in text and "slot[/link]" in text
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("L")
        await settle(app, pilot)
        text = screen_text(app)
        assert "event received" in text and "intent created" in text
