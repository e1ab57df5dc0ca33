"""Every worker has a home thread; capabilities grant what they say.

A real KB folder, a real SQLite file and a real ``goalsui mcp`` process driven by the
MCP SDK's client, as in test_mcp_tools.py.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goalsui.kb.layout import WorkerSeed
from goalsui.service import Service
from goalsui.store.models import Thread
from tests.base_kit import run_cli
from tests.mcp_kit import end_run, error, mcp_session, ok, start_run, tool_names


@pytest.fixture
def svc(empty_kb: Path, make_service) -> Service:
    return make_service(empty_kb)


def seed(name: str, capabilities: list[str], **extra: object) -> WorkerSeed:
    definition = {"schedule": {"cron": "0 3 * * *"}, "capabilities": capabilities, **extra}
    return WorkerSeed(name, definition, prompt=f"# {name}\n\nthe {name}'s own instructions\n")


@pytest.fixture
def goal(svc: Service) -> str:
    seeds = [
        seed("scout", ["read_kb", "todos", "schedule"]),
        seed("planner", ["todos", "schedule", "write_kb"]),
        seed("bare", ["todos"]),
    ]
    view = svc.goals.create("Home Test", "give every worker a home", seeds, protocol="# rules\n")
    return view.goal_id


def test_a_worker_gets_its_home_thread_with_its_goal_and_keeps_it(svc: Service, goal: str) -> None:
    homes = {t.worker: t for t in svc.threads.list() if t.goal_id == goal}
    assert sorted(homes) == ["bare", "planner", "scout"]
    assert homes["scout"].title == "Home Test / scout" and not homes["scout"].private
    svc.index.sync()  # found again, not made twice
    svc.index.sync([goal])
    assert svc.threads.home(goal, "scout").id == homes["scout"].id
    assert len(svc.threads.list()) == 3


def test_a_database_without_home_threads_gets_them_lazily(svc: Service, goal: str) -> None:
    with svc.store.write() as s:  # as a database from before home threads
        for thread in s.exec(select(Thread)).all():
            s.delete(thread)
    assert svc.threads.list() == []
    made = svc.threads.home(goal, "scout")  # a run's scope asks for it
    assert made.title == "Home Test / scout"
    svc.index.sync()  # the KB index makes the others
    assert {t.worker for t in svc.threads.list()} == {"scout", "planner", "bare"}
    assert svc.threads.home(goal, "scout").id == made.id


async def test_a_worker_turn_is_served_todo_tools_in_its_home_thread(
    svc: Service, goal: str
) -> None:
    intent = svc.workers.intent(goal, "scout")
    run = start_run(svc, intent)
    home = svc.threads.home(goal, "scout")
    async with mcp_session(svc, "--run", str(run.id)) as s:
        names = await tool_names(s)
        assert {"todo_add", "todo_list", "schedule_intent", "goal_kb_read"} <= names
        assert "thread_post" not in names and "goal_kb_write" not in names
        added = await ok(s, "todo_add", {"text": "look at the flaky test"})
        listed = await ok(s, "todo_list", {})
        at = (svc.now() + timedelta(hours=1)).isoformat()
        follow = await ok(
            s,
            "schedule_intent",
            {"title": "again", "instruction": "is it still flaky?", "kind": "at", "schedule": at},
        )
    assert added["thread_id"] == home.id == listed["thread_id"]
    assert [t.text for t in svc.todos.list(home.id)] == ["look at the flaky test"]
    made = svc.intents.get(follow["intent"]["id"])
    assert (made.thread_id, made.goal_id, made.worker) == (home.id, goal, None)


async def test_a_thread_run_of_a_workers_follow_up_gets_the_workers_capabilities(
    svc: Service, goal: str
) -> None:
    planner = svc.workers.intent(goal, "planner")
    run = start_run(svc, planner)
    at = (svc.now() + timedelta(hours=1)).isoformat()
    async with mcp_session(svc, "--run", str(run.id)) as s:
        made = await ok(
            s, "schedule_intent", {"title": "t", "instruction": "i", "kind": "at", "schedule": at}
        )
    end_run(svc, run.id)
    follow_up = svc.intents.get(made["intent"]["id"])
    follow_run = start_run(svc, follow_up)
    async with mcp_session(svc, "--run", str(follow_run.id)) as s:
        names = await tool_names(s)
        # the planner's write_kb (a plain thread run never gets it); not the thread
        # run's defaults read_kb and threads, which the planner does not have
        assert {"goal_kb_write", "todo_add", "schedule_intent"} <= names
        assert not names & {"thread_post", "goal_kb_list"}
        await ok(s, "goal_kb_write", {"path": "notes.md", "text": "planned\n"})
    assert (svc.kb.goal_dir(goal) / "notes.md").read_text() == "planned\n"
    # An operator's intent in an ordinary thread keeps the thread run's capabilities.
    other = svc.threads.create("ordinary")
    plain = svc.intents.create(
        title="o", instruction="i", kind="at", schedule=at, thread_id=other.id, goal_id=goal
    )
    plain_run = start_run(svc, plain)
    async with mcp_session(svc, "--run", str(plain_run.id)) as s:
        names = await tool_names(s)
    assert {"thread_post", "goal_kb_list"} <= names and "goal_kb_write" not in names


async def test_a_worker_without_read_kb_reads_only_its_prompt_and_the_protocol(
    svc: Service, goal: str
) -> None:
    run = start_run(svc, svc.workers.intent(goal, "bare"))
    async with mcp_session(svc, "--run", str(run.id)) as s:
        names = await tool_names(s)
        assert "goal_kb_read" in names and "goal_kb_list" not in names
        mine = await ok(s, "goal_kb_read", {"path": "workers/bare/prompt.md"})
        assert "the bare's own instructions" in mine["text"]
        assert (await ok(s, "goal_kb_read", {"path": "./protocol.md"}))["text"] == "# rules\n"
        for other in ("workers/scout/prompt.md", "definition.yaml", "state.yaml", "."):
            assert "read_kb is not granted" in await error(s, "goal_kb_read", {"path": other})
        assert "leaves its folder" in await error(s, "goal_kb_read", {"path": "../x"})
    # with read_kb the whole tree is readable
    run = start_run(svc, svc.workers.intent(goal, "scout"))
    async with mcp_session(svc, "--run", str(run.id)) as s:
        await ok(s, "goal_kb_read", {"path": "workers/bare/prompt.md"})
        assert "goal_kb_list" in await tool_names(s)


def test_doctor_and_worker_add_warn_about_capabilities_that_grant_nothing(
    svc: Service, goal: str
) -> None:
    where: dict[str, Any] = {
        "kb": svc.kb.root,
        "state": svc.state_dir,
        "extra_env": {"GOALSUI_DB": svc.db_url},
    }
    proc = run_cli(
        "worker", "add", goal, "lister", "--cron", "0 5 * * *",
        "--command", "llm -m gpt-4o", "--capabilities", "todos,nightshift", **where,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "grant nothing" in proc.stderr
    assert "{mcp_config}" in proc.stderr
    proc = run_cli(
        "worker", "add", goal, "agent", "--cron", "0 6 * * *",
        "--runner", "claude", "--capabilities", "todos,nightshift", **where,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "nightshift grants nothing: this is not a nightshift goal" in proc.stderr
    doctor = run_cli("doctor", **where)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr  # warnings only
    lines = [line for line in doctor.stdout.splitlines() if "grant" in line and "nothing" in line]
    assert len(lines) == 2
    assert any("workers/lister/definition.yaml: warning:" in line for line in lines)
    assert any("workers/agent/definition.yaml: warning:" in line for line in lines)
    as_json = run_cli("doctor", "--json", **where)
    assert '"warnings"' in as_json.stdout and as_json.returncode == 0


def test_a_follow_up_in_a_workers_home_thread_runs_with_the_workers_runner(
    svc: Service, goal: str
) -> None:
    """The KB has no default runner: a follow-up the worker's turn scheduled into its home
    thread runs with the worker's own runner, not "no runner configured"."""
    from goalsui.runners.turn import resolve_runner

    definition = svc.kb.goal_dir(goal) / "workers" / "scout" / "definition.yaml"
    definition.write_text(definition.read_text() + "runner:\n  agent: codex\n")
    svc.index.sync([goal])
    home = svc.threads.home(goal, "scout")
    follow_up = svc.intents.create(
        title="check again", instruction="look", kind="at",
        schedule=(svc.now() + timedelta(hours=1)).isoformat(), thread_id=home.id,
    )  # fmt: skip
    assert resolve_runner(svc, follow_up) == {"agent": "codex"}
    elsewhere = svc.intents.create(
        title="other", instruction="x", kind="at",
        schedule=(svc.now() + timedelta(hours=1)).isoformat(),
        thread_id=svc.threads.create("plain").id,
    )  # fmt: skip
    assert resolve_runner(svc, elsewhere) == {}  # the KB default: none set
