"""A worker turn run by the real scheduler, through an agent CLI that acts via goalsui mcp.

The agent is tests/scripts/standin_agent.py: it reads the prompt, reads the MCP config
the runner wrote for the run, starts ``goalsui mcp`` from it with the SDK client and
calls tools as a model would (the calls are written in the worker's prompt.md).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from goalsui.kb.layout import WorkerSeed
from goalsui.scheduler import Scheduler
from goalsui.service import Service
from goalsui.store.models import Intent
from tests.base_kit import FakeClock, run_cli
from tests.mcp_kit import SCRIPTS

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
def svc(empty_kb: Path, make_service, clock) -> Service:
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
    return svc.goals.create("Agent Goal", "let an agent act", [worker]).goal_id


def agent_turn(svc: Service, clock: FakeClock, goal: str, thread_id: int, title: str) -> Intent:
    """An ``at`` intent due now: worker ``agent``'s turn through the claude preset."""
    return svc.intents.create(
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
    thread = svc.threads.create("build watch")
    todo = svc.todos.add(thread.id, "check the build")
    svc.todos.add(thread.id, "write the notes")
    turn = agent_turn(svc, clock, goal, thread.id, "agent turn")
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        (run_id,) = await sched.tick()
        await sched.drain(timeout=180)
        run = svc.runs.get(run_id)
        assert run.status == "ok", (run.reason, svc.runs.output(run_id))

        assert [t.done for t in svc.todos.list(thread.id) if t.id == todo.id] == [True]
        (follow_up,) = [i for i in svc.intents.list() if i.title == "build check"]
        assert (follow_up.thread_id, follow_up.goal_id, follow_up.worker) == (thread.id, goal, None)
        # derived from the turn's fire (intent + fire count), the same for a retried turn
        fire = f"fire:{turn.id}.{svc.intents.get(turn.id).fires}:"
        assert (follow_up.operation_key or "").startswith(fire)
        answer = [m for m in svc.threads.messages(thread.id) if m.run_id == run_id]
        assert answer and answer[0].content.startswith("stand-in agent made 2 tool calls")
        assert answer[0].provenance == f"Came back about: {turn.title}"
        assert not list(svc.runs_dir.glob("*.mcp.json"))  # the config lived as long as the run
        assert "[tool] → todo_complete(" in svc.runs.output(run_id)  # inline with the output

        clock.set(follow_up_at + timedelta(seconds=1))
        (later,) = await sched.tick()
        await sched.drain(timeout=120)
    finally:
        await sched.stop(grace=1)
    assert svc.runs.get(later).intent_id == follow_up.id
    came_back = [m for m in svc.threads.messages(thread.id) if m.run_id == later]
    assert came_back[0].provenance == "Came back about: build check"
    assert "Look at the build again" in came_back[0].content

    shown = goalsui_cli(svc, "runs", "show", str(run_id), "--json")
    assert shown.returncode == 0, shown.stderr
    transcript = json.loads(shown.stdout)
    names = [c["name"] for c in transcript["tool_calls"]]
    assert names == ["goal_kb_read", "todo_list", "todo_complete", "schedule_intent"]
    assert transcript["tool_calls"][3]["arguments"]["title"] == "build check"
    assert '"created":true' in transcript["tool_calls"][3]["result"]  # compact JSON
    assert (
        transcript["argv"][:2] == ["claude", "-p"] and "--strict-mcp-config" in transcript["argv"]
    )
    assert "You are worker `agent`" in transcript["prompt"]
    text = goalsui_cli(svc, "runs", "show", str(run_id))
    assert (
        text.returncode == 0 and "schedule_intent" in text.stdout and "todo_complete" in text.stdout
    )


async def test_an_argv_runner_gets_the_mcp_config_and_run_id_placeholders(svc, clock):
    """``{mcp_config}`` names the run's HTTP endpoint, ``{mcp_stdio_config}`` a stdio
    ``goalsui mcp --run``; a runner given its tools that never opens them fails no-tools."""
    thread = svc.threads.create("plain")
    svc.intents.create(
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
                "--stdio={mcp_stdio_config}",
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
    run = svc.runs.get(run_id)
    assert run.status == "failed" and run.reason is not None
    assert run.reason.startswith("no-tools: the agent never opened its goalsui tool session")
    assert run.argv is not None and run.argv[-1] == str(run_id)
    (line,) = [x for x in svc.runs.output(run_id).splitlines() if x.startswith('{"configs"')]
    seen = json.loads(line)
    assert seen["run_id"] == str(run_id)
    http, stdio = seen["configs"]["config"], seen["configs"]["stdio"]
    for config in (http, stdio):
        path = Path(config["path"])
        assert path.parent == svc.runs_dir and not path.exists()  # removed after the run
    assert Path(http["path"]).name == f"{run_id}.mcp.json"
    entry = http["document"]["mcpServers"]["goalsui"]
    assert entry["type"] == "http" and entry["url"].startswith("http://127.0.0.1:")
    assert entry["headers"]["Authorization"].startswith("Bearer ")
    assert entry["headers"]["Authorization"][7:] not in " ".join(run.argv)  # never in argv
    server = stdio["document"]["mcpServers"]["goalsui"]
    assert server["args"][-3:] == ["mcp", "--run", str(run_id)]
    assert server["env"]["GOALSUI_DB"] == svc.db_url


async def test_a_schedulers_agent_turns_get_their_tools_over_its_http_listener(
    svc: Service, clock: FakeClock, fake_claude: Path
) -> None:
    """The claude preset's config names the scheduler's listener (not a process to start);
    the run records the tools its agent was offered; the listener closes with the
    scheduler."""
    goal = agent_goal(svc, clock.now + timedelta(days=1))
    thread = svc.threads.create("build watch")
    svc.todos.add(thread.id, "todo for the turn")
    agent_turn(svc, clock, goal, thread.id, "over http")
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        (run_id,) = await sched.tick()
        await sched.drain(timeout=180)
        run = svc.runs.get(run_id)
        assert run.status == "ok", (run.reason, svc.runs.output(run_id))
        (answer,) = [m for m in svc.threads.messages(thread.id) if m.run_id == run_id]
        assert answer.content.startswith("stand-in agent made 2 tool calls")
        session = svc.agents.tool_session(run_id)
        assert session is not None and "todo_complete" in session["tools"]
        assert "schedule_intent" in session["tools"] and "goal_kb_write" not in session["tools"]
        (message,) = [m for m in svc.threads.messages(thread.id) if m.run_id == run_id]
        url = run_output_url(svc.runs.output(run_id))
    finally:
        await sched.stop(grace=1)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    with pytest.raises(OSError):  # the listener went with the scheduler
        socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=2)


def run_output_url(output: str) -> str:
    """The tool URL the stand-in agent says it connected to."""
    for line in output.splitlines():
        if '"goalsui_standin"' in line:
            return str(json.loads(line)["goalsui_standin"]["url"])
    raise AssertionError(f"no stand-in answer in {output!r}")
