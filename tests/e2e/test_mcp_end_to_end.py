"""A worker turn run by the real scheduler, through an agent CLI that acts via goalsui mcp.

The agent is tests/scripts/standin_agent.py: it reads the prompt, reads the MCP config
the runner wrote for the run, starts ``goalsui mcp`` from it with the SDK client and
calls tools as a model would (the calls are written in the worker's prompt.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from base_kit import FakeClock, run_cli
from mcp_kit import SCRIPTS
from test_mcp_host import alive, children

from goalsui.domain.models import Intent
from goalsui.kb.layout import WorkerSeed
from goalsui.runners.mcp_host import host_for
from goalsui.scheduler import Scheduler
from goalsui.service import Service

STANDIN = SCRIPTS / "standin_agent.py"


def goalsui_cli(svc: Service, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        *args,
        kb=svc.kb.root,
        state=svc.state_dir,
        extra_env={"GOALSUI_DB": svc.db_url},
        input="",  # no terminal: stdin at its end
    )


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:  # type: ignore[no-untyped-def]
    echo = SCRIPTS / "run_echo_stdin.py"
    (empty_kb / "goalsui.yaml").write_text(
        f'runner:\n  command: ["{{python}}", "{echo}"]\n  timeout: 60s\n'
    )
    return make_service(empty_kb, clock=clock)


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``claude`` on PATH that is the stand-in agent (so the claude preset's argv runs)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "claude"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return shim


def agent_prompt(follow_up_at: str) -> str:
    schedule = {
        "title": "build check",
        "instruction": "Look at the build again and say whether it is green.",
        "kind": "at",
        "schedule": follow_up_at,
    }
    return (
        "# agent\n\nTick the first open todo, then come back later about the build.\n\n"
        'CALL todo_complete {"todo_id": {first_open_todo}}\n'
        f"CALL schedule_intent {json.dumps(schedule)}\n"
    )


def agent_goal(svc: Service, follow_up_at: datetime) -> str:
    """A goal whose worker ``agent`` may read the KB, tick todos and schedule."""
    worker = WorkerSeed(
        "agent",
        {"schedule": {"cron": "0 3 * * *"}, "capabilities": ["read_kb", "todos", "schedule"]},
        prompt=agent_prompt(follow_up_at.isoformat()),
    )
    return svc.setup_goal("Agent Goal", "let an agent act", [worker]).goal_id


def agent_turn(svc: Service, clock: FakeClock, goal: str, thread_id: int, title: str) -> Intent:
    """An ``at`` intent due now: worker ``agent``'s turn through the claude preset."""
    return svc.create_intent(
        title=title,
        instruction="",
        kind="at",
        schedule=clock.now.isoformat(),
        goal_id=goal,
        worker="agent",
        thread_id=thread_id,
        runner={"agent": "claude"},
    )


async def test_a_worker_turn_schedules_a_follow_up_and_ticks_a_todo(svc, clock, fake_claude):
    follow_up_at = clock.now + timedelta(hours=2)
    goal = agent_goal(svc, follow_up_at)
    thread = svc.create_thread("build watch")
    todo = svc.add_todo(thread.id, "check the build")
    svc.add_todo(thread.id, "write the notes")
    turn = agent_turn(svc, clock, goal, thread.id, "agent turn")
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        (run_id,) = await sched.tick()
        await sched.drain(timeout=180)
        run = svc.get_run(run_id)
        assert run.status == "ok", (run.reason, svc.run_output(run_id))

        assert [t.done for t in svc.list_todos(thread.id) if t.id == todo.id] == [True]
        (follow_up,) = [i for i in svc.list_intents() if i.title == "build check"]
        assert (follow_up.thread_id, follow_up.goal_id, follow_up.worker) == (thread.id, goal, None)
        # derived from the turn's fire (intent + fire count), the same for a retried turn
        fire = f"fire:{turn.id}.{svc.get_intent(turn.id).fires}:"
        assert (follow_up.operation_key or "").startswith(fire)
        answer = [m for m in svc.messages(thread.id) if m.run_id == run_id]
        assert answer and answer[0].content.startswith("stand-in agent made 2 tool calls")
        assert answer[0].provenance == f"Came back about: {turn.title}"
        assert not list(svc.runs_dir.glob("*.mcp.json"))  # the config lived as long as the run
        assert "[tool] → todo_complete(" in svc.run_output(run_id)  # inline with the output

        clock.set(follow_up_at + timedelta(seconds=1))
        (later,) = await sched.tick()
        await sched.drain(timeout=120)
    finally:
        await sched.stop(grace=1)
    assert svc.get_run(later).intent_id == follow_up.id
    came_back = [m for m in svc.messages(thread.id) if m.run_id == later]
    assert came_back[0].provenance == "Came back about: build check"
    assert "Look at the build again" in came_back[0].content

    shown = goalsui_cli(svc, "runs", "show", str(run_id), "--json")
    assert shown.returncode == 0, shown.stderr
    transcript = json.loads(shown.stdout)
    names = [c["name"] for c in transcript["tool_calls"]]
    assert names == ["goal_kb_read", "todo_list", "todo_complete", "schedule_intent"]
    assert transcript["tool_calls"][3]["arguments"]["title"] == "build check"
    assert '"created": true' in transcript["tool_calls"][3]["result"]
    assert (
        transcript["argv"][:2] == ["claude", "-p"] and "--strict-mcp-config" in transcript["argv"]
    )
    assert "You are worker `agent`" in transcript["prompt"]
    text = goalsui_cli(svc, "runs", "show", str(run_id))
    assert (
        text.returncode == 0 and "schedule_intent" in text.stdout and "todo_complete" in text.stdout
    )


async def test_an_argv_runner_gets_the_mcp_config_and_run_id_placeholders(svc, clock):
    thread = svc.create_thread("plain")
    svc.create_intent(
        title="plain argv",
        instruction="post a note",
        kind="at",
        schedule=clock.now.isoformat(),
        thread_id=thread.id,
        runner={
            "command": [
                "{python}",
                str(SCRIPTS / "run_print_config.py"),
                "--config={mcp_config}",
                "{run_id}",
            ]
        },
    )
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        (run_id,) = await sched.tick()
        await sched.drain(timeout=120)
    finally:
        await sched.stop(grace=1)
    run = svc.get_run(run_id)
    assert run.status == "ok", run.reason
    assert run.argv is not None and run.argv[-1] == str(run_id)
    config_arg = run.argv[-2]
    path = Path(config_arg.removeprefix("--config="))
    assert path.parent == svc.runs_dir and path.name == f"{run_id}.mcp.json"
    assert not path.exists()  # removed after the run
    (message,) = [m for m in svc.messages(thread.id) if m.run_id == run_id]
    seen = json.loads(message.content)
    server = seen["config"]["mcpServers"]["goalsui"]
    assert seen["run_id"] == str(run_id)
    assert server["args"][-3:] == ["mcp", "--run", str(run_id)]
    assert server["env"]["GOALSUI_DB"] == svc.db_url


async def test_a_schedulers_agent_turns_use_its_warm_host(
    svc: Service, clock: FakeClock, fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first agent turn starts the host; a later turn's session is served by a forked
    child of it; stopping the scheduler ends the host and removes its folder."""
    monkeypatch.setenv("GOALSUI_MCP_WARM", "1")  # the suite turns it off elsewhere
    goal = agent_goal(svc, clock.now + timedelta(days=1))
    thread = svc.create_thread("build watch")

    def turn(title: str) -> None:
        svc.add_todo(thread.id, f"todo for {title}")
        agent_turn(svc, clock, goal, thread.id, title)

    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        turn("first")
        (first,) = await sched.tick()
        await sched.drain(timeout=180)
        assert svc.get_run(first).status == "ok", svc.run_output(first)
        host = host_for(svc)
        assert host.pid is not None and alive(host.pid)
        assert host.ready(timeout=60)
        served: set[int] = set()
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                served.update(children(host.pid or 0))
                time.sleep(0.005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            turn("second")
            clock.advance(1)
            (second,) = await sched.tick()
            await sched.drain(timeout=180)
        finally:
            sampling.set()
            sampler.join()
        assert svc.get_run(second).status == "ok", svc.run_output(second)
        assert "[tool] → todo_complete(" in svc.run_output(second)
        assert served, "the second turn's session was not served by the warm host"
        pid, folder = host.pid, host.socket.parent if host.socket else None
    finally:
        await sched.stop(grace=1)
    assert not alive(pid)
    assert folder is not None and not folder.exists()
