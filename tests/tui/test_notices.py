"""Notifications: a finished non-silent result and every alert become a notice naming the
thread or goal; the notify: command gets each as JSON on stdin; silent runs never notify;
the console's toast jumps there on J."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from goalsui.kb.layout import WorkerSeed
from goalsui.scheduler import Scheduler
from goalsui.scheduler.notices import Notice, Notifier
from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.records import ThreadsScreen
from tests.tui_kit import screen_as, screen_text, settle, wait_for

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def script(name: str, *args: str) -> dict:
    return {"command": [sys.executable, str(SCRIPTS / name), *args]}


@pytest.fixture
def svc(empty_kb: Path, tmp_path: Path, make_service, clock) -> Service:
    notify = [sys.executable, str(SCRIPTS / "notify_capture.py"), str(tmp_path / "notices.jsonl")]
    (empty_kb / "goalsui.yaml").write_text(
        f"notify: {json.dumps(notify)}\nalerts:\n  after: 1\n  cooldown: 1h\n"
    )
    return make_service(empty_kb, clock=clock)


def delivered(tmp_path: Path) -> list[dict]:
    path = tmp_path / "notices.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_results_and_alerts_notify_silent_runs_do_not(
    svc: Service, tmp_path: Path, clock
) -> None:
    thread = svc.threads.create("Visa application")
    now = clock.now.isoformat()
    said = svc.intents.create(
        title="report", instruction="say", kind="at", schedule=now, thread_id=thread.id,
        runner=script("sched_ok.py"),
    )  # fmt: skip
    svc.intents.create(
        title="quiet", instruction="nothing", kind="at", schedule=now, thread_id=thread.id,
        runner=script("run_silent.py"),
    )  # fmt: skip
    goal = svc.goals.create(
        "Ops", "t", [WorkerSeed("probe", {"schedule": {"every": "1h"}, "runner": {"command": ["false"]}})]
    )  # fmt: skip
    svc.workers.run_now(goal.goal_id, "probe")

    shown: list[Notice] = []
    scheduler = Scheduler(svc, clock=clock, grace_seconds=1)
    notifier = Notifier(svc, shown.append)
    notifier.attach(scheduler)
    try:
        assert len(await scheduler.tick()) == 3
        await scheduler.drain(timeout=60)
        await notifier.drain()
    finally:
        await scheduler.stop(grace=1)
    by_kind = {n.kind: n for n in shown}
    assert sorted(n.kind for n in shown) == ["alert", "result"]  # the silent run: nothing
    result = by_kind["result"]
    assert (result.where, result.target, result.intent_id) == (
        "Visa application",
        f"thread:{thread.id}",
        said.id,
    )
    assert result.text.startswith("done for run ")  # the reply's headline
    alert = by_kind["alert"]
    assert alert.target == f"goal:{goal.goal_id}" and alert.where == f"{goal.goal_id}/probe"
    assert "failed 1 times in a row" in alert.text
    received = delivered(tmp_path)
    assert sorted(n["kind"] for n in received) == ["alert", "result"]
    assert {n["target"] for n in received} == {f"thread:{thread.id}", f"goal:{goal.goal_id}"}


async def test_a_failing_notify_command_is_journalled_not_raised(
    empty_kb: Path, make_service, clock
) -> None:
    (empty_kb / "goalsui.yaml").write_text('notify: ["false"]\n')
    svc = make_service(empty_kb, clock=clock)
    notice = Notice(kind="result", where="x", text="y", thread_id=1)
    assert await Notifier(svc).run_command(("false",), notice) is False
    assert any(j.action == "notify command failed" for j in svc.journal.recent())


async def test_the_console_toast_names_the_thread_and_j_jumps_there(svc: Service, clock) -> None:
    svc.threads.create("Groceries")
    thread = svc.threads.create("Visa application")
    svc.intents.create(
        title="report", instruction="say", kind="at", schedule=clock.now.isoformat(),
        thread_id=thread.id, runner=script("sched_ok.py"),
    )  # fmt: skip
    app = make_app(svc, scheduler=True, watch=False, clock=clock)
    async with app.run_test(size=(130, 40)) as pilot:
        await settle(app, pilot)
        await wait_for(
            pilot,
            lambda: any(n.title == "Result" for n in app.notices),
            timeout=60,
            what="the result toast",
        )
        [toast] = [n for n in app.notices if n.title == "Result"]
        assert "Visa application: done for run" in toast.message and "J: go there" in toast.message
        await pilot.press("J")
        await settle(app, pilot)
        assert screen_as(app, ThreadsScreen).selected_thread_id() == thread.id
        assert "second line of the result" in screen_text(app)


async def test_an_alert_toast_names_the_goal_and_j_selects_it(svc: Service, clock) -> None:
    svc.goals.create("Groceries", "t")
    goal = svc.goals.create(
        "Ops", "t", [WorkerSeed("probe", {"schedule": {"every": "1h"}, "runner": {"command": ["false"]}})]
    )  # fmt: skip
    svc.workers.run_now(goal.goal_id, "probe")
    app = make_app(svc, scheduler=True, watch=False, clock=clock)
    async with app.run_test(size=(130, 40)) as pilot:
        await settle(app, pilot)
        await wait_for(
            pilot,
            lambda: any(n.title == "Alert" for n in app.notices),
            timeout=60,
            what="the alert toast",
        )
        [toast] = [n for n in app.notices if n.title == "Alert"]
        assert f"{goal.goal_id}/probe:" in toast.message and "J: go there" in toast.message
        await pilot.press("J")
        await settle(app, pilot)
        ref = app.main.goals.selected_ref
        assert ref is not None and ref.goal_id == goal.goal_id
        assert app.focused is app.main.goals


async def test_a_private_threads_reply_reaches_notify_as_a_link_only(
    svc: Service, empty_kb: Path, tmp_path: Path, clock
) -> None:
    from goalsui.service import runner_checks

    runner_checks.set_default_runner(svc, script("sched_ok.py"))
    thread = svc.threads.create("Medical letters", private=True)
    svc.threads.say(thread.id, "summarise the letter")
    shown: list[Notice] = []
    scheduler = Scheduler(svc, clock=clock, grace_seconds=1)
    notifier = Notifier(svc, shown.append)
    notifier.attach(scheduler)
    try:
        assert len(await scheduler.tick()) == 1
        await scheduler.drain(timeout=60)
        await notifier.drain()
    finally:
        await scheduler.stop(grace=1)
    reply = [m for m in svc.threads.messages(thread.id) if m.role == "assistant"]
    assert reply and reply[-1].content.strip()
    (received,) = delivered(tmp_path)
    assert received["private"] is True and received["target"] == f"thread:{thread.id}"
    assert (
        f"private thread {thread.id}" in received["text"] and "Medical letters" in received["text"]
    )
    words = reply[-1].content.strip().splitlines()[0]
    assert words not in json.dumps(received, ensure_ascii=False)  # never the reply's text
