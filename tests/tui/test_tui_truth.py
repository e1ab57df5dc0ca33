"""Views tell the truth: filter counts, goal-level intents, one disabled worker, help
with every pane's keys and every symbol, and r on a goal asks first (see test_tui_actions)."""

from __future__ import annotations

from datetime import timedelta

from goalsui.service import Service
from goalsui.tui import keys
from goalsui.tui.app import make_app
from goalsui.tui.fmt import INTENT_GLYPH, RUN_GLYPH
from goalsui.tui.screens.modals import HelpScreen, legend
from tests.tui_kit import PULSE, add_run, auto_disable, label, screen_text, settle, worker_intent

SIZE = (160, 48)


def console(service: Service, clock):
    return make_app(service, scheduler=False, watch=False, clock=clock)


async def test_filter_counts_say_how_many_of_all(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        total = len(main.dash.goals)
        main.set_filter("goals", "pulse")
        await settle(app, pilot)
        assert f"1 of {total} goals" in main.query_one("#goals-pane").border_subtitle
        intents = len(main.timeline.shown_intents(main.dash, filtered=False))
        main.set_filter("timeline", "pulse")
        await settle(app, pilot)
        shown = main.timeline.row_count
        assert 0 < shown < intents
        assert f"{shown} of {intents} intents" in main.query_one("#timeline-pane").border_subtitle
        main.set_filter("threads", "visa")
        await settle(app, pilot)
        threads = len(main.dash.threads)
        assert f"1 of {threads} threads" in main.query_one("#threads-pane").border_subtitle


async def test_goal_level_intent_shows_under_its_goal_by_title(demo: Service, clock) -> None:
    intent = demo.intents.create(
        title="Check the pulse board", instruction="look", kind="cron",
        schedule="0 9 * * *", goal_id=PULSE,
    )  # fmt: skip
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        node = main.goals.child_nodes[f"intent/{PULSE}/{intent.id}"]
        assert "Check the pulse board" in label(node)
        cell = main.timeline.get_cell(f"intent:{intent.id}", "intent").plain
        assert "Check the pulse board" in cell and "None" not in cell
        assert main.goals.select_key(f"intent/{PULSE}/{intent.id}")
        await settle(app, pilot)
        assert main.selection.intent_id == intent.id


async def test_one_disabled_worker_marks_the_worker_not_the_goal(demo: Service, clock) -> None:
    flaky = worker_intent(demo, PULSE, "flaky")
    with demo.store.write() as s:
        from goalsui.store.models import Intent

        row = s.get(Intent, flaky)
        row.status, row.last_error = "failed", "upstream unreachable"
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        goal = label(main.goals.goal_nodes[PULSE])
        assert "active" in goal and "failed" not in goal and "1 of 2 disabled" in goal
        assert "auto-disabled" in label(main.goals.child_nodes[f"worker/{PULSE}/flaky"])
        assert "auto-disabled" not in label(main.goals.child_nodes[f"worker/{PULSE}/pulse"])


async def test_help_lists_every_pane_key_every_symbol_and_how_to_close(
    demo: Service, clock
) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        groups = dict(app.screen.groups)
        described = {d for rows in groups.values() for _, d in rows}
        for chain in (keys.GOALS_SAFE, keys.GOALS_ACTIONS, keys.THREADS_ACTIONS,
                      keys.TIMELINE_SAFE, keys.FAILED_ACTIONS, keys.DETAIL_SAFE):  # fmt: skip
            for binding in chain:
                assert binding.description in described, binding.id
        symbols = " ".join(g for g, _ in legend())
        for glyph in {*RUN_GLYPH.values(), *INTENT_GLYPH.values(), "◆", "▲", "⚠"}:
            assert glyph in symbols, glyph
        assert "escape, q or ? closes this" in screen_text(app)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is app.main


def test_the_failures_screens_keys_follow_the_domains_transitions() -> None:
    from datetime import UTC, datetime

    from goalsui.domain.transitions import Action
    from goalsui.tui.screens.failures import allows
    from goalsui.tui.widgets.failed_pane import NEEDS_REVIEW, FailureItem

    def item(status: str, run_id: int | None = 1) -> FailureItem:
        return FailureItem("k", datetime(2026, 12, 5, tzinfo=UTC), status, 1, "t", "e", run_id)

    for status in ("failed", "timeout", "interrupted", "missed", NEEDS_REVIEW):
        assert allows(item(status), Action.RETRY) and allows(item(status), Action.DISMISS)
        assert not allows(item(status), Action.RESUME)
    disabled = item("auto-disabled", None)
    assert allows(disabled, Action.RESUME) and allows(disabled, Action.RETRY)
    assert not allows(disabled, Action.DISMISS)  # nothing to dismiss: resume or retry it
    assert not allows(item("running"), Action.DISMISS)  # a live run is stopped, not dismissed


async def test_d_on_the_main_screen_is_offered_only_on_a_dismissable_run(
    demo: Service, clock
) -> None:
    """In Failed runs, ``d`` dismisses a failed run; on an auto-disabled intent's row (no
    run to dismiss: resume or retry it) the key is not offered and pressing it does nothing."""
    flaky = worker_intent(demo, PULSE, "flaky")
    run_id = add_run(demo, flaky, "failed", clock.now - timedelta(minutes=3), reason="exit 1")
    pulse = worker_intent(demo, PULSE, "pulse")
    auto_disable(demo, pulse, "quota")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main, failed = app.main, app.main.failed
        await pilot.press("4")
        failed.move_to_key(f"intent:{pulse}")
        await settle(app, pilot)
        assert main.selection.kind == "intent"
        assert not failed.check_action("dismiss", ())  # the failed pane's own key
        await pilot.press("d")
        await settle(app, pilot)
        assert demo.intents.get(pulse).status == "failed"
        assert f"intent:{pulse}" in failed.row_keys()

        failed.move_to_key(f"run:{run_id}")
        await settle(app, pilot)
        assert main.selection.kind == "run" and failed.check_action("dismiss", ())
        await pilot.press("d")
        await settle(app, pilot)
        assert demo.runs.get(run_id).dismissed
        assert f"run:{run_id}" not in failed.row_keys()
