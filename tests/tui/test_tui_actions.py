"""Every key action of the console, through the pilot: the database and the screen change."""

from __future__ import annotations

import asyncio
import stat
import sys
from datetime import timedelta

from textual.command import CommandList, CommandPalette

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.fmt import Palette
from goalsui.tui.screens.modals import ConfirmScreen, HelpScreen, TextInputScreen
from goalsui.tui.screens.output import OutputScreen
from tests.tui_kit import (
    PULSE,
    add_run,
    auto_disable,
    label,
    screen_text,
    settle,
    wait_for,
    worker_intent,
)

SIZE = (110, 36)


def console(service: Service, clock, **kwargs):
    kwargs.setdefault("scheduler", False)
    kwargs.setdefault("watch", False)
    return make_app(service, clock=clock, **kwargs)


async def pick_worker(app, pilot, worker: str = "pulse", goal: str = PULSE) -> None:
    main = app.main
    main.goals.focus()
    assert main.goals.select_key(f"worker/{goal}/{worker}")
    await settle(app, pilot)
    assert main.selection.kind == "worker" and main.selection.worker == worker


def worker_label(app, worker: str = "pulse", goal: str = PULSE) -> str:
    return label(app.main.goals.child_nodes[f"worker/{goal}/{worker}"])


async def test_pause_and_resume_a_worker(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        assert "in 1m00s" in worker_label(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).status == "paused"
        assert "paused" in worker_label(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).status == "active"
        assert "in 1m00s" in worker_label(app)
        actions = [j.action for j in demo.journal.recent()]
        assert "intent paused" in actions and "intent resumed" in actions


async def test_pause_and_resume_a_goal(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.goals.select_key(f"goal/{PULSE}")
        await settle(app, pilot)
        assert app.main.selection.kind == "goal"
        await pilot.press("p")
        await settle(app, pilot)
        assert demo.goals.get(PULSE).status == "paused"
        assert "status: paused" in (demo.kb.root / PULSE / "definition.yaml").read_text()
        assert "paused" in label(app.main.goals.goal_nodes[PULSE])
        assert "paused" in worker_label(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert demo.goals.get(PULSE).status == "active"
        assert "active" in label(app.main.goals.goal_nodes[PULSE])


async def test_run_now_marks_the_worker_due(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot, "flaky")
        await pilot.press("r")
        await settle(app, pilot)
        intent = demo.intents.get(intent_id)
        assert intent.next_run_at == clock.now and intent.pending_trigger == "run-now"
        assert " due" in worker_label(app, "flaky")
        assert app.main.timeline.get_cell(f"intent:{intent_id}", "next").plain == "due"
        # on a goal: every active worker of it, after a confirmation
        app.main.goals.select_key(f"goal/{PULSE}")
        await settle(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Run all 2 workers" in app.screen.question
        assert app.screen.focused is not None and app.screen.focused.id == "no"
        await pilot.press("n")
        await settle(app, pilot)
        assert demo.workers.intent(PULSE, "pulse").pending_trigger is None
        await pilot.press("r")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert demo.workers.intent(PULSE, "pulse").pending_trigger == "run-now"


async def test_end_schedule_asks_first_and_p_reinstates(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot, "flaky")
        await pilot.press("x")  # nothing runs: x (stop the run) does nothing
        await settle(app, pilot)
        assert app.screen is app.main
        await pilot.press("X")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "End the schedule" in app.screen.question
        assert app.screen.focused is not None and app.screen.focused.id == "no"
        await pilot.press("enter")  # the safe choice
        await settle(app, pilot)
        assert demo.intents.get(intent_id).status == "active"
        await pilot.press("X")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).status == "cancelled"
        assert "cancelled" in worker_label(app, "flaky")
        assert not app.main.check_action("end_schedule", ())
        assert app.main.check_action("pause", ())  # p reinstates an ended schedule
        await pilot.press("p")
        await settle(app, pilot)
        intent = demo.intents.get(intent_id)
        assert intent.status == "active" and intent.next_run_at is not None
        assert "cancelled" not in worker_label(app, "flaky")


async def test_x_on_a_running_run_asks_to_stop_only_the_run(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    with demo.store.write() as s:
        from goalsui.store.models import Intent

        row = s.get(Intent, intent_id)
        row.status = "firing"
    run_id = add_run(demo, intent_id, "running", clock.now)
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot, "flaky")
        await pilot.press("x")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Stop run {run_id}" in app.screen.question
        await pilot.press("y")
        await settle(app, pilot)
        intent = demo.intents.get(intent_id)
        # the scheduler owning the run stops it; the schedule is untouched
        assert intent.status == "firing" and intent.pending_trigger == "stop"
        assert intent.next_run_at is not None


async def test_retry_resumes_an_auto_disabled_intent(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    auto_disable(demo, intent_id, "upstream unreachable")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        failed = app.main.failed
        assert f"intent:{intent_id}" in failed.row_keys()
        assert "auto-disabled" in worker_label(app, "flaky")
        await pilot.press("4")
        failed.move_to_key(f"intent:{intent_id}")
        await settle(app, pilot)
        await pilot.press("R")
        await settle(app, pilot)
        intent = demo.intents.get(intent_id)
        assert intent.status == "active" and intent.pending_trigger == "retry"
        assert f"intent:{intent_id}" not in failed.row_keys()


async def test_dismiss_a_failed_run_from_the_pane(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "flaky")
    run_id = add_run(
        demo,
        intent_id,
        "failed",
        clock.now - timedelta(minutes=3),
        reason="exit 1",
        output="boom\n",
    )
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert f"run:{run_id}" in app.main.failed.row_keys()
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("enter")  # enter opens the run's output too
        await settle(app, pilot)
        assert isinstance(app.screen, OutputScreen) and app.screen.run_id == run_id
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert demo.runs.get(run_id).dismissed
        assert f"run:{run_id}" not in app.main.failed.row_keys()


async def test_add_complete_and_reopen_todos(demo: Service, clock) -> None:
    thread = demo.threads.find("Visa application")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        table = app.main.threads
        table.move_to_key(f"thread:{thread.id}")
        await settle(app, pilot)
        await pilot.press("a")
        await settle(app, pilot)
        assert isinstance(app.screen, TextInputScreen)
        await pilot.press(*"Print the insurance certificate")
        await pilot.press("enter")
        await settle(app, pilot)
        todo = next(
            t for t in demo.todos.list(thread.id) if t.text == "Print the insurance certificate"
        )
        assert not todo.done
        assert f"todo:{todo.id}" in table.row_keys()
        table.move_to_key(f"todo:{todo.id}")
        await settle(app, pilot)
        await pilot.press("space")
        await settle(app, pilot)
        assert next(t for t in demo.todos.list(thread.id) if t.id == todo.id).done
        cell = table.get_cell(f"todo:{todo.id}", "item")
        assert "strike" in str(cell.spans[-1].style)
        keys = table.row_keys()
        open_after = [
            k for k in keys[keys.index(f"thread:{thread.id}") + 1 :] if k.startswith("todo:")
        ]
        assert open_after.index(f"todo:{todo.id}") > 0  # done items sort after open ones
        table.move_to_key(f"todo:{todo.id}")
        await settle(app, pilot)
        await pilot.press("space")
        await settle(app, pilot)
        assert not next(t for t in demo.todos.list(thread.id) if t.id == todo.id).done
        assert "strike" not in str(table.get_cell(f"todo:{todo.id}", "item").spans[-1].style)


async def test_edit_in_editor_then_detail_shows_the_change(
    demo: Service, clock, tmp_path, monkeypatch
) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(
        f"#!{sys.executable}\nimport sys\nopen(sys.argv[1], 'a').write('\\nEDITED BY THE OPERATOR\\n')\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("GOALSUI_EDITOR_NO_SUSPEND", "1")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        assert app.main.detail.current.label == "prompt.md"
        await pilot.press("e")
        await settle(app, pilot)
        prompt = demo.kb.root / PULSE / "workers" / "pulse" / "prompt.md"
        assert prompt.read_text().endswith("EDITED BY THE OPERATOR\n")
        assert "EDITED BY THE OPERATOR" in str(app.main.detail.shown[1])
        assert any(j.action == "file edited" for j in demo.journal.recent())


async def test_open_output_follows_a_live_run(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    run_id = add_run(
        demo, intent_id, "running", clock.now - timedelta(seconds=5), output="line 1\n"
    )
    log = demo.runs.log_path(run_id)
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        assert "running 0:05" in worker_label(app)
        await pilot.press("o")
        await settle(app, pilot)
        assert isinstance(app.screen, OutputScreen)
        screen = app.screen
        assert screen.text == "line 1\n"
        log.write_text("line 1\nline 2\n")
        screen.load()
        await settle(app, pilot)
        assert screen.written == len("line 1\nline 2\n")
        assert [s.text for s in screen.log_widget.lines] == ["line 1", "line 2"]
        await pilot.press("w")  # wrap long lines: the log is rewritten wrapped
        await settle(app, pilot)
        assert screen.log_widget.wrap
        screen.log_widget.scroll_home(animate=False)
        screen.follow = False
        await pilot.press("f")  # follow the tail again
        await settle(app, pilot)
        assert screen.follow and screen.log_widget.auto_scroll
        await pilot.press("q")
        await settle(app, pilot)
        assert app.screen is app.main


async def test_filter_the_goals_pane_then_clear(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert len(app.main.goals.goal_nodes) == 4
        await pilot.press("slash")
        await pilot.press(*"night")
        await settle(app, pilot)
        assert list(app.main.goals.goal_nodes) == ["nightshift-979afc6e"]
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.main.focused is app.main.goals
        assert "goals:'night'" in app.main.query_one("StatusBar").info.filter
        await pilot.press("escape")
        await settle(app, pilot)
        assert len(app.main.goals.goal_nodes) == 4


async def test_freeze_holds_the_display_until_unfrozen(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("Z")
        await settle(app, pilot)
        assert app.frozen and app.main.query_one("StatusBar").info.frozen
        demo.intents.pause(intent_id)
        await settle(app, pilot)
        assert "paused" not in worker_label(app)
        await pilot.press("Z")
        await settle(app, pilot)
        assert not app.frozen
        assert "paused" in worker_label(app)


async def test_help_screen_is_grouped_and_theme_switch(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        groups = dict(app.screen.groups)
        assert ("p", "Pause/Resume") in groups["This pane"]
        assert ("ctrl+r", "Refresh now") in groups["Global"] or any(
            d == "Refresh now" for _, d in groups["Global"]
        )
        assert any(d == "Timeline pane" for _, d in groups["Navigation"])
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is app.main
        # t: the next theme, and the status colours follow it
        assert app.theme == "goalsui-dark"
        ok_before = app.palette.ok
        await pilot.press("t")
        await settle(app, pilot)
        assert app.theme != "goalsui-dark" and app.theme in app.theme_names
        assert app.palette == Palette.from_theme(app.current_theme) and app.palette.ok != ok_before


async def test_command_palette_runs_area_verb_commands(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        await pilot.press("ctrl+p")
        await settle(app, pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Intent: Pause")
        commands = app.screen.query_one(CommandList)
        await wait_for(
            pilot,
            lambda: (
                commands.option_count > 0
                and commands.highlighted == 0
                and "Intent: Pause" in str(commands.get_option_at_index(0).prompt)
            ),
            what="the palette to offer 'Intent: Pause' first",
        )
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).status == "paused"


async def test_refresh_shows_another_process_change(demo: Service, clock, tmp_path) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    other = Service(demo.kb.root, demo.db_url, demo.state_dir, clock=clock)  # like a CLI process
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        other.intents.pause(intent_id)  # no in-process notification reaches the console
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert "paused" in worker_label(app)
        await pilot.press("q")  # no live runs: quits without asking
        await wait_for(pilot, lambda: app.return_value is not None, what="the console to quit")
    assert app.return_value == 0
    other.close()


async def test_a_tick_while_the_console_closes_is_dropped(demo: Service, clock) -> None:
    """The 1 s tick (a timer task of its own) may fire while the screens are taken apart."""
    app = console(demo, clock)
    close_all = app._close_all
    ticks: list[int] = []

    async def close_while_ticking() -> None:
        closing = asyncio.ensure_future(close_all())
        while not closing.done():  # a tick at every step of the teardown
            try:
                app._poll_and_tick()
            except Exception as exc:  # noqa: BLE001 - the way Textual's timer reports it
                app._handle_exception(exc)
            ticks.append(len(app.screen_stack))
            await asyncio.sleep(0)
        await closing

    app._close_all = close_while_ticking
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
    assert ticks and ticks[0] == 1  # it ticked while the main screen was still there


async def test_zoom_timeline_cycle_detail_files_and_copy_id(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await pilot.press("minus")
        await settle(app, pilot)
        assert app.main.timeline.span == timedelta(hours=72)
        await pilot.press("plus")
        await pilot.press("plus")
        await settle(app, pilot)
        assert app.main.timeline.span == timedelta(hours=12)
        await pick_worker(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        assert app.main.detail.current.label == "prompt.md"
        await pilot.press("right_square_bracket")
        await settle(app, pilot)
        assert app.main.detail.current.label == "definition.yaml"
        assert "every: 1m" in str(app.main.detail.shown[1])
        await pilot.press("left_square_bracket")
        await settle(app, pilot)
        assert app.main.detail.current.label == "prompt.md"
        await pilot.press("1")
        await settle(app, pilot)
        assert app.main.pane == "goals"
        await pilot.press("y")  # copy the selected worker's id
        await settle(app, pilot)
        assert app.clipboard == f"{PULSE}/pulse"


async def test_read_only_binds_no_action(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    app = console(demo, clock, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        for key in ("p", "r", "x", "X", "R", "e"):
            await pilot.press(key)
            await settle(app, pilot)
        assert app.screen is app.main
        assert demo.intents.get(intent_id).status == "active"
        assert demo.intents.get(intent_id).pending_trigger is None
        assert "READ-ONLY" in screen_text(app)
        state_ids = {
            "pause",
            "run_now",
            "stop_run",
            "end_schedule",
            "retry",
            "edit",
            "dismiss",
            "todo.add",
            "todo.toggle",
        }
        for node in app.main.walk_children(with_self=True):
            ids = {b.id for _, b in node._bindings}
            assert not ids & state_ids, (node, ids & state_ids)
        await pilot.press("F")
        await settle(app, pilot)
        assert not {b.id for _, b in app.screen._bindings} & state_ids


async def test_keymap_from_goalsui_yaml_remaps_run_now(demo: Service, clock) -> None:
    config = demo.kb.root / "goalsui.yaml"
    config.write_text(config.read_text() + "\nkeymap:\n  run_now: n\n")
    intent_id = worker_intent(demo, PULSE, "pulse")
    app = console(demo, clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot)
        await pilot.press("r")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).pending_trigger is None
        await pilot.press("n")
        await settle(app, pilot)
        assert demo.intents.get(intent_id).pending_trigger == "run-now"


async def test_end_schedule_dialog_shows_its_whole_text_at_80x24(demo: Service, clock) -> None:
    app = console(demo, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pick_worker(app, pilot, "flaky")
        await pilot.press("X")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = " ".join(screen_text(app).split())
        for part in (app.screen.question, app.screen.detail):
            for word in part.split():
                assert word in text, word
        assert "[y]" in text and "[n]" in text
