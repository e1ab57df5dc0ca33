"""Real agent turns: the real Claude Code and Codex, run by the scheduler through their
presets exactly as goalsui builds them, act through goalsui's tools.

A scripted model server (tests/model_server.py) plays the model: it calls the goalsui
tools it is offered, then answers. Each turn is a worker's scheduled turn: the scheduler
serves the run's tools on its HTTP listener, the preset's config points the CLI there,
and the effects are read back from the database and through the CLI. The CLIs come from
npm at pinned versions (tests/agent_clis.py); without npm these tests skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goalsui.kb.layout import WorkerSeed
from goalsui.mcp.server import ToolServer
from goalsui.runners import presets
from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.agent_clis import AgentClis, claude_env, codex_env
from tests.base_kit import FakeClock, run_cli

pytestmark = pytest.mark.slow

PRESETS = ("claude", "codex")
CAPABILITIES = ["read_kb", "write_kb", "todos", "threads", "schedule"]


def acting_script(n: int) -> list[dict[str, Any]]:
    """The model's turn: a follow-up, a todo, a post and a file, then the answer."""
    return [
        {
            "call": "schedule_intent",
            "arguments": {
                "title": f"check again {n}",
                "instruction": "Look at the build again.",
                "kind": "at",
                "in": "2h",
            },
        },
        {"call": "todo_add", "arguments": {"text": f"write the notes {n}"}},
        {"call": "thread_post", "arguments": {"text": f"Build is green ({n})."}},
        {"call": "goal_kb_write", "arguments": {"path": f"notes/{n}.md", "text": f"# {n}\n"}},
        {"answer": f"Acted in turn {n}."},
    ]


@pytest.fixture
def svc(empty_kb: Path, make_service, clock: FakeClock) -> Service:
    return make_service(empty_kb, clock=clock)


def agent_goal(svc: Service, agent: str) -> str:
    worker = WorkerSeed(
        "agent",
        {
            "schedule": {"cron": "0 3 * * *"},
            "runner": {"agent": agent},
            "capabilities": CAPABILITIES,
            "timeout": "3m",
        },
        prompt="# agent\n\nSchedule a check, note a todo, post the status, write notes.\n",
    )
    return svc.goals.create(f"Real {agent}", "let a real agent act", [worker]).goal_id


@pytest.fixture
def cli_env(
    agent_clis: AgentClis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """``cli_env(agent, server)``: the scheduler's environment (its turns inherit it) set
    for the real CLI: its binary first on PATH, pointed at the scripted model server."""

    def point(agent: str, server: Any) -> None:
        bindir = agent_clis.prefix / "node_modules" / ".bin"
        if agent == "claude":
            env = claude_env(server.url, tmp_path / "home", wait_for_mcp=False)
        else:
            env = codex_env(server.url, tmp_path / "codex-home")
        for key, value in env.items():
            if key != "PATH" and os.environ.get(key) != value:
                monkeypatch.setenv(key, value)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")

    yield point


async def one_turn(svc: Service, sched: Scheduler, goal: str, clock: FakeClock) -> int:
    clock.advance(1)
    svc.workers.run_now(goal, "agent")
    (run_id,) = await sched.tick()
    await sched.drain(timeout=240)
    return run_id


def transcript(svc: Service, run_id: int) -> dict[str, Any]:
    shown = run_cli(
        "runs", "show", str(run_id), "--json",
        kb=svc.kb.root, state=svc.state_dir, extra_env={"GOALSUI_DB": svc.db_url}, input="",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


@pytest.mark.parametrize("agent", PRESETS)
async def test_three_of_three_turns_act_through_goalsui(
    agent: str, svc: Service, clock: FakeClock, model_server, cli_env
) -> None:
    goal = agent_goal(svc, agent)
    home = svc.threads.home(goal, "agent")
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        for n in (1, 2, 3):
            server = model_server(acting_script(n))
            cli_env(agent, server)
            run_id = await one_turn(svc, sched, goal, clock)
            run = svc.runs.get(run_id)
            output = svc.runs.output(run_id)
            assert run.status == "ok", (run.reason, output[-2000:])
            assert server.missing == [], f"not offered: {server.missing}"
            offered = set(server.offered_tools[0])
            for tool in ("todo_add", "todo_list", "thread_post", "schedule_intent"):
                assert f"mcp__goalsui__{tool}" in offered, offered
            session = svc.agents.tool_session(run_id)
            assert session is not None and "todo_add" in session["tools"]
            # each effect, read back
            (follow_up,) = [i for i in svc.intents.list() if i.title == f"check again {n}"]
            assert follow_up.thread_id == home.id
            assert f"write the notes {n}" in [t.text for t in svc.todos.list(home.id)]
            assert f"Build is green ({n})." in [m.content for m in svc.threads.messages(home.id)]
            assert svc.files.read(goal, f"notes/{n}.md") == f"# {n}\n"
            shown = transcript(svc, run_id)
            names = [c["name"] for c in shown["tool_calls"]]
            assert names == ["schedule_intent", "todo_add", "thread_post", "goal_kb_write"]
            assert shown["argv"][0] == agent and not any(c["is_error"] for c in shown["tool_calls"])
            assert f"Acted in turn {n}." in (shown["output"] or "")
    finally:
        await sched.stop(grace=1)


@contextlib.contextmanager
def cpu_burners(count: int = 2) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("agent", PRESETS)
async def test_a_cold_start_beside_two_cpu_burners_is_never_ok_without_tools(
    agent: str, svc: Service, clock: FakeClock, model_server, cli_env
) -> None:
    """The first turn of a fresh scheduler (its listener not started yet), on a busy
    machine: the tools arrive, or the run fails no-tools; never ok without them."""
    goal = agent_goal(svc, agent)
    server = model_server(acting_script(1))
    cli_env(agent, server)
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        with cpu_burners():
            run_id = await one_turn(svc, sched, goal, clock)
    finally:
        await sched.stop(grace=1)
    run = svc.runs.get(run_id)
    got_tools = bool(server.offered_tools and server.offered_tools[0])
    if run.status == "ok":
        assert got_tools and server.missing == []
    else:
        assert run.status == "failed" and not got_tools
        assert (run.reason or "").startswith("no-tools"), run.reason


async def test_claude_waits_for_a_slow_tool_listing(
    svc: Service, clock: FakeClock, model_server, cli_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tools/list that takes 4 s (longer than Claude's default wait of about 2 s): the
    preset's wait settings hold the turn until the tools are there."""
    await _slow_listing_turn(svc, clock, model_server, cli_env, monkeypatch, delay=4.0)


async def test_a_listing_slower_than_the_wait_fails_no_tools(
    svc: Service, clock: FakeClock, model_server, cli_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude gives up waiting (2 s here) and its model is offered nothing: the turn
    exits 0 with a text answer, and goalsui records it failed no-tools."""
    monkeypatch.setattr(presets, "CONNECT_TIMEOUT_MS", 2000)
    await _slow_listing_turn(svc, clock, model_server, cli_env, monkeypatch, delay=12.0)


async def _slow_listing_turn(
    svc: Service,
    clock: FakeClock,
    model_server: Any,
    cli_env: Any,
    monkeypatch: pytest.MonkeyPatch,
    *,
    delay: float,
) -> None:
    import anyio

    listing = ToolServer.list_tools

    async def slow_list(self: ToolServer) -> Any:
        await anyio.sleep(delay)
        return await listing(self)

    monkeypatch.setattr(ToolServer, "list_tools", slow_list)
    goal = agent_goal(svc, "claude")
    server = model_server(acting_script(1))
    cli_env("claude", server)
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        run_id = await one_turn(svc, sched, goal, clock)
    finally:
        await sched.stop(grace=1)
    run = svc.runs.get(run_id)
    if delay < 10:
        assert run.status == "ok", (run.reason, svc.runs.output(run_id)[-2000:])
        assert server.missing == [] and "mcp__goalsui__todo_add" in server.offered_tools[0]
    else:
        assert server.offered_tools == [[]] or not server.offered_tools[0]
        assert run.status == "failed" and (run.reason or "").startswith("no-tools"), run.reason


# -- a nightshift task, done by the real agent in its own worktree -----------------------------
NIGHT = "2026-12-01"
#: the model's task turn: edit a file and (where the CLI may) commit it
TASK_SCRIPT = {
    "claude": [
        {
            "call": "Bash",
            "arguments": {
                "command": "echo 'fixed by the night' >> NIGHTSHIFT.md && git add NIGHTSHIFT.md"
                " && git -c user.name=Night -c user.email=night@example.invalid"
                " commit -qm 'nightshift: fix the typo'",
                "description": "commit the fix",
            },
        },
        {"answer": "Committed the fix."},
    ],
    # Codex's sandbox cannot write the repository's .git: goalsui commits what it left
    "codex": [
        {
            "call": "exec_command",
            "arguments": {"cmd": "echo 'fixed by the night' >> NIGHTSHIFT.md"},
        },
        {"answer": "Edited NIGHTSHIFT.md."},
    ],
}


@pytest.mark.parametrize("agent", PRESETS)
def test_a_nightshift_task_commits_on_its_branch(
    agent: str, tmp_path: Path, model_server, cli_env
) -> None:
    """``nightshift init --runner AGENT`` then a replayed night: the real agent's task
    turn edits its worktree, the commit lands on the task's branch, the base is untouched."""
    from tests.git_kit import git, make_repo

    repo = make_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "main").strip()
    server = model_server(TASK_SCRIPT[agent])
    cli_env(agent, server)
    env = {**os.environ, "GOALSUI_KB": str(tmp_path / "kb")}
    env["GOALSUI_STATE_DIR"] = str(tmp_path / "state")
    env.pop("GOALSUI_DB", None)

    def goalsui(*args: str) -> str:
        done = run_cli(*args, env=env, input="", timeout=600)
        assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
        return done.stdout

    goalsui("init", str(tmp_path / "kb"))
    created = json.loads(
        goalsui(
            "nightshift",
            "init",
            str(repo),
            "--workers",
            "1",
            "--runner",
            agent,
            "--check",
            f"{sys.executable} -c pass",
            "--json",
        )  # fmt: skip
    )
    goalsui("nightshift", "plan", "add", "worker-1", "Fix the typo", "--night", NIGHT)
    goalsui("nightshift", "replay", "--night", NIGHT)
    plan = json.loads(goalsui("nightshift", "plan", "--json", "--night", NIGHT))
    (item,) = [i for i in plan if i["worker"] == "worker-1"]
    assert (item["status"], item["commits"]) == ("done", 1), (item, created["goal_id"])
    branch = git(repo, "branch", "--list", "nightshift/*", "--format=%(refname:short)").split()
    assert branch == [f"nightshift/{NIGHT}/worker-1-fix-the-typo"]
    assert "fixed by the night" in git(repo, "show", f"{branch[0]}:NIGHTSHIFT.md")
    assert git(repo, "rev-parse", "main").strip() == base  # never on the base branch
    task_calls = [name for name, _ in server.calls]
    assert any(name.endswith(("Bash", "exec_command")) for name in task_calls), task_calls
