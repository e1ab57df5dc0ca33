"""``goalsui mcp`` as a subprocess, driven by the MCP SDK's own stdio client.

Real KB folder, real SQLite file; every tool, bad input, confinement and narrowing.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goalsui.domain.capabilities import ALL_TOOLS, READ_ONLY
from goalsui.kb.layout import WorkerSeed
from goalsui.service import Service
from goalsui.store.models import Intent, Journal
from tests.base_kit import run_cli
from tests.mcp_kit import (
    counts,
    end_run,
    error,
    mcp_session,
    ok,
    start_run,
    tool_calls,
    tool_names,
    tree,
)

EVERY = ["read_kb", "write_kb", "schedule", "todos", "threads", "goals"]


@pytest.fixture
def svc(empty_kb: Path, make_service) -> Service:
    return make_service(empty_kb)


@pytest.fixture
def world(svc: Service) -> dict:
    """A goal with a full-power worker and a read-only one, a thread with todos, a private thread."""
    seeds = [
        WorkerSeed(
            "writer",
            {"schedule": {"cron": "0 3 * * *"}, "capabilities": EVERY},
            prompt="# writer\n",
        ),
        WorkerSeed(
            "reader", {"schedule": {"cron": "0 4 * * *"}, "capabilities": ["read_kb"]}, prompt="r\n"
        ),
    ]
    goal = svc.goals.create("Tool Test", "exercise the tools", seeds).goal_id
    thread = svc.threads.create("work")
    first = svc.todos.add(thread.id, "check the build")
    secret = svc.threads.create("secret", private=True)
    return {"goal": goal, "thread": thread.id, "todo": first.id, "secret": secret.id}


def run_of(svc: Service, world: dict, worker: str = "writer", thread: int | None = None):
    """A live run of a turn of ``worker`` reporting into ``thread`` (default: the work thread)."""
    with svc.store.write() as s:  # stored directly: a private thread refuses new intents
        intent = Intent(
            title=f"{worker} turn",
            kind="at",
            schedule=svc.now().isoformat(),
            goal_id=world["goal"],
            worker=worker,
            thread_id=world["thread"] if thread is None else thread,
            status="firing",
        )
        s.add(intent)
        s.flush()
    return start_run(svc, intent)


async def test_an_unscoped_session_serves_only_read_only_tools(svc, world):
    async with mcp_session(svc) as session:
        assert await tool_names(session) == set(READ_ONLY)
        listing = await ok(session, "goal_kb_list", {"goal_id": world["goal"]})
        assert {"definition.yaml", "workers"} <= {e["name"] for e in listing["entries"]}
        text = await ok(
            session, "goal_kb_read", {"goal_id": world["goal"], "path": "definition.yaml"}
        )
        assert "Tool Test" in text["text"]
        assert "name the goal" in await error(session, "goal_kb_read", {"path": "definition.yaml"})
        assert "write_kb" in await error(
            session, "goal_kb_write", {"goal_id": world["goal"], "path": "x.md", "text": "x"}
        )
    assert not (svc.kb.goal_dir(world["goal"]) / "x.md").exists()


async def test_every_tool_works_in_an_operator_session(svc, world):
    goal, thread = world["goal"], world["thread"]
    gdir = svc.kb.goal_dir(goal)
    async with mcp_session(svc, "--goal", goal, "--thread", str(thread)) as s:
        assert await tool_names(s) == set(ALL_TOOLS)
        assert goal in [g["goal_id"] for g in (await ok(s, "list_goals", {}))["goals"]]
        assert [w["name"] for w in (await ok(s, "get_goal", {"goal_id": goal}))["workers"]] == [
            "reader",
            "writer",
        ]
        await ok(s, "goal_kb_write", {"path": "notes/today.md", "text": "# today\n"})
        assert (gdir / "notes" / "today.md").read_text() == "# today\n"
        assert (await ok(s, "goal_kb_read", {"path": "notes/today.md"}))["text"] == "# today\n"
        assert [e["name"] for e in (await ok(s, "goal_kb_list", {"path": "notes"}))["entries"]] == [
            "today.md"
        ]
        logged = await ok(s, "goal_log_append", {"text": "checked the build"})
        assert "checked the build" in (gdir / logged["path"]).read_text()
        await ok(s, "update_worker", {"worker": "writer", "prompt": "# writer v2\n"})
        assert (gdir / "workers" / "writer" / "prompt.md").read_text() == "# writer v2\n"
        await ok(s, "update_worker", {"worker": "reader", "schedule": {"cron": "15 4 * * *"}})
        assert svc.workers.intent(goal, "reader").schedule == "15 4 * * *"
        listed = await ok(s, "todo_list", {})
        rev = listed["revision"]
        added = await ok(s, "todo_add", {"text": "write the notes", "expected_revision": rev})
        assert added["revision"] == rev + 1
        done = await ok(s, "todo_complete", {"todo_id": world["todo"]})
        assert done["todo"]["done"] is True
        reopened = await ok(s, "todo_reopen", {"todo_id": world["todo"]})
        assert reopened["todo"]["done"] is False
        assert [t["text"] for t in (await ok(s, "todo_list", {}))["todos"]] == [
            "check the build",
            "write the notes",
        ]
        at = (svc.now() + timedelta(hours=2)).isoformat()
        made = await ok(
            s,
            "schedule_intent",
            {"title": "look again", "instruction": "is it green?", "kind": "at", "schedule": at},
        )
        assert made["created"] is True and made["intent"]["thread_id"] == thread
        cron = await ok(
            s,
            "schedule_intent",
            {
                "title": "daily",
                "instruction": "x",
                "kind": "cron",
                "schedule": "0 9 * * *",
                "timezone": "Europe/Berlin",
            },
        )
        assert cron["intent"]["timezone"] == "Europe/Berlin"
        every = await ok(
            s,
            "schedule_intent",
            {"title": "pulse", "instruction": "x", "kind": "every", "schedule": "2h"},
        )
        assert every["intent"]["kind"] == "heartbeat"
        event = await ok(
            s,
            "schedule_intent",
            {"title": "on push", "instruction": "x", "kind": "event", "event_source": "ci"},
        )
        assert event["intent"]["event_source"] == "ci"
        listed_ids = {i["id"] for i in (await ok(s, "list_intents", {}))["intents"]}
        assert made["intent"]["id"] in listed_ids
        cancelled = await ok(s, "cancel_intent", {"intent_id": made["intent"]["id"]})
        assert cancelled["intent"]["status"] == "cancelled"
        posted = await ok(s, "thread_post", {"text": "build is green"})
        new_goal = await ok(
            s,
            "setup_goal",
            {
                "name": "Spawned",
                "task": "t",
                "workers": [{"name": "w", "schedule": {"every": "1h"}, "prompt": "p"}],
            },
        )
        due = await ok(s, "run_worker_now", {"worker": "writer"})
    message = [m for m in svc.threads.messages(thread) if m.id == posted["message_id"]][0]
    assert message.content == "build is green" and "agent session" in (message.provenance or "")
    assert svc.goals.get(new_goal["goal_id"]).workers[0].name == "w"
    assert svc.intents.get(due["intent_id"]).pending_trigger == "run-now"


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("get_goal", {"goal_id": "../etc"}, "invalid goal id"),
    ("nightshift_plan", {}, "is not a nightshift"),
    ("nightshift_plan_add", {"worker": "writer", "task": "x", "reason": "y"}, "not a nightshift"),
    ("get_goal", {"goal_id": "no-such-goal"}, "no goal"),
    (
        "setup_goal",
        {"name": "x", "task": "t", "workers": [{"name": "w", "runner": "sh"}]},
        "runner",
    ),
    (
        "setup_goal",
        {"name": "x", "task": "t", "workers": [{"name": "w", "schedule": {"cron": "99 * * * *"}}]},
        "cron",
    ),
    ("run_worker_now", {"worker": "nobody"}, "no scheduled worker"),
    ("goal_kb_list", {"path": "missing"}, "not a folder"),
    ("goal_kb_read", {"path": "nothing.md"}, "no file"),
    ("goal_kb_read", {"path": 5}, "bad argument 'path'"),
    (
        "goal_kb_write",
        {
            "path": "workers/writer/definition.yaml",
            "text": "schedule: {every: 1h}\nrunner: {command: [sh, -c, evil]}\n",
        },
        "not written by agents",
    ),
    ("goal_kb_write", {"path": "definition.yaml", "text": "goal_id: x\n"}, "not written by agents"),
    ("goal_kb_write", {"path": "notes.yaml", "text": "a: [unclosed\n"}, "notes.yaml"),
    ("goal_kb_write", {"path": "state.yaml", "text": "a: [unclosed\n"}, "state.yaml"),
    ("goal_kb_write", {"path": "log/2026-01-01.md", "text": "rewritten"}, "append-only"),
    ("goal_kb_write", {"path": "x.md", "text": "a", "goal_id": "other-goal"}, "outside"),
    ("thread_read", {"limit": 0}, "limit"),
    ("delete_goal", {"goal_id": "nope", "confirm": "nope2"}, "confirm"),
    ("goal_log_append", {"text": "   "}, "needs text"),
    ("update_worker", {"worker": "writer", "schedule": {"cron": "bad"}}, "cron"),
    (
        "update_worker",
        {"worker": "writer", "runner": {"command": ["sh"]}},
        "unknown argument 'runner'",
    ),
    ("todo_list", {"thread_id": 999}, "outside"),
    ("todo_add", {"text": ""}, "needs text"),
    ("todo_add", {"text": "late", "expected_revision": 0}, "revision"),
    ("todo_complete", {"todo_id": 987654}, "no todo"),
    ("todo_complete", {"todo_id": "first"}, "bad argument 'todo_id'"),
    ("todo_reopen", {"todo_id": 987654}, "no todo"),
    (
        "schedule_intent",
        {"title": "t", "instruction": "i", "kind": "cron", "schedule": "61 * * * *"},
        "cron",
    ),
    (
        "schedule_intent",
        {"title": "t", "instruction": "i", "kind": "at", "schedule": "2030-01-01T09:00"},
        "offset",
    ),
    (
        "schedule_intent",
        {
            "title": "t",
            "instruction": "i",
            "kind": "cron",
            "schedule": "0 9 * * *",
            "timezone": "Mars/Olympus",
        },
        "zone",
    ),
    (
        "schedule_intent",
        {"title": "t", "instruction": "i", "kind": "yearly"},
        "bad argument 'kind'",
    ),
    (
        "schedule_intent",
        {"title": "", "instruction": "i", "kind": "every", "schedule": "1h"},
        "title",
    ),
    ("cancel_intent", {"intent_id": 424242}, "no intent"),
    ("list_intents", {"include_ended": "sometimes"}, "bad argument"),
    ("thread_post", {"text": " "}, "needs text"),
]


async def test_bad_input_to_each_tool_is_a_one_line_error_that_changes_nothing(svc, world):
    no_input = {"list_goals", "get_context"}  # nothing to get wrong
    assert {c[0] for c in BAD_CALLS} == set(ALL_TOOLS) - no_input
    async with mcp_session(svc, "--goal", world["goal"], "--thread", str(world["thread"])) as s:
        for name, arguments, reason in BAD_CALLS:
            before_db, before_kb = counts(svc), tree(svc.kb.root)
            message = await error(s, name, arguments)
            assert reason.lower() in message.lower(), (name, arguments, message)
            assert counts(svc) == before_db, (name, arguments)
            assert tree(svc.kb.root) == before_kb, (name, arguments)


async def test_paths_out_of_the_goal_tree_are_refused(svc, world, tmp_path):
    gdir = svc.kb.goal_dir(world["goal"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    (gdir / "link-file.txt").symlink_to(outside / "secret.txt")
    (gdir / "link-dir").symlink_to(outside, target_is_directory=True)
    (gdir / "inside-link.md").symlink_to(gdir / "definition.yaml")
    os.mkfifo(gdir / "pipe")
    other = svc.goals.create("Other", "neighbour").goal_id
    before = tree(outside), (svc.kb.goal_dir(other) / "definition.yaml").read_bytes()
    async with mcp_session(svc, "--goal", world["goal"], "--thread", str(world["thread"])) as s:
        for path in (
            f"../{other}/definition.yaml",
            "/etc/passwd",
            "link-file.txt",
            "link-dir/secret.txt",
            "a/../../x",
        ):
            await error(s, "goal_kb_read", {"path": path})
            await error(s, "goal_kb_write", {"path": path, "text": "owned"})
        await error(s, "goal_kb_list", {"path": "link-dir"})
        await error(s, "goal_kb_list", {"path": ".."})
        assert "not a regular file" in await error(s, "goal_kb_read", {"path": "pipe"})
        assert "not a regular file" in await error(
            s, "goal_kb_write", {"path": "pipe", "text": "x"}
        )
        names = {e["name"] for e in (await ok(s, "goal_kb_list", {}))["entries"]}
        inside = await ok(s, "goal_kb_read", {"path": "inside-link.md"})  # a link inside is fine
    assert "Tool Test" in inside["text"]
    assert "link-file.txt" not in names and "link-dir" not in names and "pipe" not in names
    assert (tree(outside), (svc.kb.goal_dir(other) / "definition.yaml").read_bytes()) == before


async def test_a_worker_without_write_kb_does_not_see_goal_kb_write(svc, world):
    async with mcp_session(svc, "--goal", world["goal"], "--worker", "reader") as s:
        assert await tool_names(s) == {
            "list_goals",
            "get_goal",
            "get_context",
            "goal_kb_list",
            "goal_kb_read",
        }
    run = run_of(svc, world, "reader")
    async with mcp_session(svc, "--run", str(run.id)) as s:
        names = await tool_names(s)
        assert "goal_kb_read" in names and "goal_kb_write" not in names
        await error(s, "goal_kb_write", {"path": "x.md", "text": "x"})
    assert not (svc.kb.goal_dir(world["goal"]) / "x.md").exists()
    assert [c.name for c in tool_calls(svc, run.id)] == ["goal_kb_write"]  # the refused call too


async def test_a_private_threads_run_gets_no_intent_tools(svc, world):
    run = run_of(svc, world, "writer", thread=world["secret"])
    async with mcp_session(svc, "--run", str(run.id)) as s:
        names = await tool_names(s)
    assert "todo_add" in names and "goal_kb_write" in names
    assert not names & {"schedule_intent", "cancel_intent", "list_intents"}
    async with mcp_session(svc, "--goal", world["goal"], "--thread", str(world["secret"])) as s:
        assert "schedule_intent" not in await tool_names(s)


async def test_schedule_intent_is_idempotent_within_a_run(svc, world):
    run = run_of(svc, world)
    at = (svc.now() + timedelta(hours=1)).isoformat()
    call = {"title": "come back", "instruction": "check the build", "kind": "at", "schedule": at}
    async with mcp_session(svc, "--run", str(run.id)) as s:
        first = await ok(s, "schedule_intent", call)
        again = await ok(s, "schedule_intent", call)
        other = await ok(s, "schedule_intent", {**call, "instruction": "check the docs"})
        keyed = await ok(s, "schedule_intent", {**call, "key": "my-op"})
        keyed_again = await ok(s, "schedule_intent", {**call, "key": "my-op"})
        refused = await error(s, "schedule_intent", {**call, "title": "changed", "key": "my-op"})
    assert first["created"] is True and again["created"] is False
    assert first["intent"]["id"] == again["intent"]["id"]
    assert other["created"] is True and other["intent"]["id"] != first["intent"]["id"]
    assert keyed_again["created"] is False and keyed_again["intent"]["id"] == keyed["intent"]["id"]
    assert "another follow-up" in refused
    made = [i for i in svc.intents.list() if i.title in ("come back", "changed")]
    assert len(made) == 3
    key = svc.intents.get(first["intent"]["id"]).operation_key or ""
    fire = f"fire:{run.intent_id}.{svc.intents.get(run.intent_id).fires}:"
    assert key.startswith(fire) and len(key) == len(fire) + 64
    calls = tool_calls(svc, run.id)
    assert [c.name for c in calls] == ["schedule_intent"] * 6
    assert calls[0].arguments == call and not calls[0].is_error
    with svc.store.read() as db:
        journal = db.exec(select(Journal).where(Journal.action == "intent created")).all()
    assert {(j.run_id, j.tool) for j in journal} == {(run.id, "schedule_intent")}


async def test_a_retried_turn_gets_the_same_follow_up_back(svc, world):
    """Each attempt of a fire is a new run; the derived key stays that of the fire."""
    first_run = run_of(svc, world)
    at = (svc.now() + timedelta(hours=1)).isoformat()
    call = {"title": "come back", "instruction": "check the build", "kind": "at", "schedule": at}
    async with mcp_session(svc, "--run", str(first_run.id)) as s:
        first = await ok(s, "schedule_intent", call)
    end_run(svc, first_run.id, status="failed")
    intent = svc.intents.get(first_run.intent_id)
    retry = start_run(svc, intent)  # the retry: the fire count is unchanged
    async with mcp_session(svc, "--run", str(retry.id)) as s:
        again = await ok(s, "schedule_intent", call)
    assert retry.id != first_run.id
    assert first["created"] is True and again["created"] is False
    assert again["intent"]["id"] == first["intent"]["id"]
    end_run(svc, retry.id)
    # The next fire of the same intent is another occurrence: a new follow-up.
    with svc.store.write() as db:
        row = db.get(Intent, first_run.intent_id)
        row.fires += 1
        db.add(row)
    next_fire = start_run(svc, intent)
    async with mcp_session(svc, "--run", str(next_fire.id)) as s:
        fresh = await ok(s, "schedule_intent", call)
    assert fresh["created"] is True and fresh["intent"]["id"] != first["intent"]["id"]
    assert len([i for i in svc.intents.list() if i.title == "come back"]) == 2


async def test_a_finished_run_cannot_be_replayed(svc, world):
    run = run_of(svc, world)
    async with mcp_session(svc, "--run", str(run.id)) as s:
        await ok(s, "todo_list", {})
        end_run(svc, run.id)
        before = counts(svc)
        message = await error(s, "todo_add", {"text": "sneaky"})
    assert "not running" in message
    assert counts(svc) == before
    proc = run_cli(
        "mcp", "--run", run.id, kb=svc.kb.root, state=svc.state_dir,
        extra_env={"GOALSUI_DB": svc.db_url}, input="", timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "not running" in proc.stderr
