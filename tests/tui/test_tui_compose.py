"""The Threads screen's compose box: typing and Enter post the message, the reply turn
(the console's own scheduler, a stand-in agent) lands in the thread view; a running
reply shows as running and ctrl+x cancels it. Plus a snapshot of a conversation."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.widgets import Input

from goalsui.domain.replies import reply_key
from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.records import ThreadsScreen
from tests.base_kit import FakeClock
from tests.tui_kit import open_demo, screen_text, settle, wait_for

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
SIZE = (120, 36)


def demo_with_agent(tmp_path: Path, clock: FakeClock, template: Path, mode: str) -> Service:
    service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    argv = [sys.executable, str(SCRIPTS / "agent_standin.py"), str(tmp_path / "prompts"), mode]
    config = service.kb.root / "goalsui.yaml"
    text = config.read_text()
    start = text.index("runner:\n  command:")
    end = text.index("\n", start + len("runner:\n  command:"))
    config.write_text(text[:start] + f"runner:\n  command: {json.dumps(argv)}" + text[end:])
    service.config(reload=True)
    assert service.config().runner.command == tuple(argv)
    return service


def keys_for(text: str) -> list[str]:
    return ["space" if c == " " else c for c in text]


async def open_threads(app, pilot) -> ThreadsScreen:
    await settle(app, pilot)
    await pilot.press("T")
    await settle(app, pilot)
    assert isinstance(app.screen, ThreadsScreen)
    return app.screen


async def test_typing_and_enter_post_and_the_reply_appears(
    tmp_path: Path, clock: FakeClock, template: Path
) -> None:
    service = demo_with_agent(tmp_path, clock, template, "echo")
    thread = service.threads.find("Visa application")
    assert thread is not None
    try:
        app = make_app(service, scheduler=True, watch=False, clock=clock)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_threads(app, pilot)
            assert screen.selected_thread_id() == thread.id
            await pilot.press("c")
            await pilot.press(*keys_for("when is my appointment"), "enter")
            await wait_for(
                pilot,
                lambda: any(m.role == "user" for m in service.threads.messages(thread.id)),
                what="the message posted",
            )
            await wait_for(
                pilot,
                lambda: "Stand-in reply to: when is my appointment" in screen_text(app),
                timeout=60,
                what="the reply in the thread view",
            )
            text = screen_text(app)
            assert "Reply to: when is my appointment" in text  # its provenance
            assert app.screen.query_one("#compose-input", Input).value == ""
        replies = [
            m for m in service.threads.messages(thread.id) if m.role == "assistant" and m.run_id
        ]
        assert [m.content.strip() for m in replies][-1:] == [
            "Stand-in reply to: when is my appointment"
        ]
    finally:
        service.close()


async def test_a_running_reply_shows_and_ctrl_x_cancels_it(
    tmp_path: Path, clock: FakeClock, template: Path
) -> None:
    service = demo_with_agent(tmp_path, clock, template, "slow")
    thread = service.threads.find("Visa application")
    assert thread is not None
    try:
        app = make_app(service, scheduler=True, watch=False, clock=clock)
        async with app.run_test(size=SIZE) as pilot:
            await open_threads(app, pilot)
            await pilot.press("c", *keys_for("take your time"), "enter")
            await wait_for(
                pilot, lambda: "⟳ replying" in screen_text(app), timeout=60, what="running"
            )
            await pilot.press("ctrl+x")
            await wait_for(
                pilot, lambda: "replying" not in screen_text(app), timeout=60, what="cancelled"
            )
            said = [m for m in service.threads.messages(thread.id) if m.role == "user"][-1]
            assert said.content == "take your time"
            reply = service.intents.list(thread_id=thread.id)
            [intent] = [i for i in reply if i.operation_key == reply_key(said.id)]
            assert intent.status == "cancelled"
            await wait_for(
                pilot,
                lambda: [r.status for r in service.runs.list(intent_id=intent.id)] == ["cancelled"],
                timeout=30,
                what="the run stopped",
            )
        assert not [m for m in service.threads.messages(thread.id) if m.intent_id == intent.id]
    finally:
        service.close()


async def test_a_read_only_console_has_no_compose_box(
    tmp_path: Path, clock: FakeClock, template: Path
) -> None:
    service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    try:
        app = make_app(service, scheduler=False, watch=False, clock=clock, read_only=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_threads(app, pilot)
            assert not screen.query("#compose-input")
    finally:
        service.close()


# -- snapshot -------------------------------------------------------------------------------------
ROOT = Path("/tmp/goalsui-snapshot-threads")  # fixed: its own, beside the other snapshots'
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def conversation(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Service, FakeClock]]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    shutil.rmtree(ROOT, ignore_errors=True)
    clock = FakeClock(NOW - timedelta(minutes=6))
    service = open_demo(ROOT / "kb", ROOT / "state", clock)
    thread = service.threads.find("Visa application")
    assert thread is not None
    service.threads.post("Did the consulate answer about the lease?", thread_id=thread.id)
    clock.advance(minutes=1)
    service.threads.post(
        "Yes: they accept a signed lease of at least 12 months. Bring the original and a "
        "copy; the appointment stays on Friday 10:40.",
        thread_id=thread.id,
        role="assistant",
        provenance="Reply to: Did the consulate answer about the lease?",
    )
    clock.advance(minutes=4)
    text = "Then add 'print the lease' to my list."
    said = service.threads.post(text, thread_id=thread.id)
    intent = service.threads.create_reply(thread.id, said.id, text)
    from goalsui.store.models import Intent

    with service.store.write() as s:  # shown as running, as while the scheduler runs it
        row = s.get(Intent, intent.id)
        row.status = "firing"
        s.add(row)
    clock.set(NOW)
    yield service, clock
    service.close()
    monkeypatch.undo()
    time.tzset()


def test_threads_screen_with_a_conversation(conversation, snap_compare) -> None:
    service, clock = conversation
    app = make_app(service, scheduler=False, watch=False, clock=clock, theme="goalsui-dark")

    async def before(pilot) -> None:
        await settle(pilot.app, pilot)
        await pilot.press("T")
        await settle(pilot.app, pilot)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(160, 40), run_before=before)
