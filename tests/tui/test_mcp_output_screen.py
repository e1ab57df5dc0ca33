"""The console's Output screen shows an agent's tool calls inline with the run's output."""

from __future__ import annotations

from pathlib import Path

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.output import OutputScreen
from tests.mcp_kit import end_run, start_run
from tests.tui_kit import screen_as, settle


async def test_tool_calls_read_inline_with_the_output(
    empty_kb: Path,
    make_service,
    clock,
) -> None:
    svc: Service = make_service(empty_kb, clock=clock)
    thread = svc.threads.create("agent")
    intent = svc.intents.create(
        title="agent turn", kind="at", schedule=clock.now.isoformat(), thread_id=thread.id
    )
    run = start_run(svc, intent)
    log = svc.runs.log_path(run.id)
    log.write_text("[goalsui] run header\nthinking about the build\n")
    svc.agents.record_tool_call(
        run.id,
        "todo_complete",
        {"todo_id": 3},
        '{"done": true}',
        is_error=False,
    )
    svc.agents.record_tool_call(
        run.id,
        "goal_kb_read",
        {"path": "../x"},
        "path leaves its folder",
        is_error=True,
    )
    with log.open("a") as fh:
        fh.write("all done \x1b[31mred\x1b[0m\n")
    end_run(svc, run.id)

    app = make_app(svc, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.push_screen(OutputScreen(run.id, "agent turn"))
        await settle(app, pilot)
        strips = list(screen_as(app, OutputScreen).log_widget.lines)
    lines = [strip.text for strip in strips]
    assert lines[1] == "thinking about the build"
    assert lines[2] == '[tool] → todo_complete({"todo_id": 3})'
    assert lines[3] == '[tool]   ← {"done": true}'
    assert lines[4] == '[tool] → goal_kb_read({"path": "../x"})'
    assert lines[5] == "[tool]   ✗ error: path leaves its folder"
    assert lines[6] == "all done red"  # escape sequences never reach the terminal
    styles = {str(seg.style) for seg in strips[2]}
    assert any("bold" in s for s in styles)
