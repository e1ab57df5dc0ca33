"""The tool surface as a model sees it, through the MCP SDK's own client: annotations,
described parameters, typed output, paging, scoped keys, no leaks, context, teaching errors
and bounds enforced at write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from goalsui.domain.capabilities import ALL_TOOLS, GOAL_CHANGING
from goalsui.kb.layout import WorkerSeed
from goalsui.service import Service
from goalsui.store.models import Intent, Journal
from tests.base_kit import run_cli
from tests.mcp_kit import counts, error, mcp_session, ok, start_run, text_of, tool_names

EVERY = ["read_kb", "write_kb", "schedule", "todos", "threads", "goals"]


@pytest.fixture
def svc(empty_kb: Path, make_service) -> Service:
    return make_service(empty_kb)


@pytest.fixture
def world(svc: Service) -> dict[str, Any]:
    seeds = [
        WorkerSeed(
            "writer",
            {"schedule": {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}, "capabilities": EVERY},
            prompt="# writer\n",
        ),
        WorkerSeed(
            "reader",
            {"schedule": {"cron": "0 4 * * *"}, "capabilities": ["read_kb", "schedule"]},
            prompt="r\n",
        ),
    ]
    goal = svc.goals.create("Surface", "exercise the surface", seeds).goal_id
    other = svc.goals.create("Neighbour", "someone else's").goal_id
    thread = svc.threads.create("work")
    other_thread = svc.threads.create("elsewhere")
    first = svc.todos.add(thread.id, "check the build")
    secret = svc.threads.create("secret", private=True)
    return {
        "goal": goal,
        "other": other,
        "thread": thread.id,
        "other_thread": other_thread.id,
        "todo": first.id,
        "secret": secret.id,
    }


def run_of(svc: Service, goal: str, worker: str | None, thread: int | None, timeout_s: int = 600):
    with svc.store.write() as s:
        intent = Intent(
            title=f"{worker} turn",
            kind="at",
            schedule=svc.now().isoformat(),
            goal_id=goal,
            worker=worker,
            thread_id=thread,
            status="firing",
            timeout_s=timeout_s,
        )
        s.add(intent)
        s.flush()
    return start_run(svc, intent)


def full(world: dict[str, Any]) -> tuple[str, ...]:
    return ("--goal", world["goal"], "--thread", str(world["thread"]))


async def test_every_tool_is_annotated_titled_described_and_typed(svc, world):
    async with mcp_session(svc, *full(world)) as s:
        tools = (await s.list_tools()).tools
        init_text = json.dumps([t.model_dump(mode="json") for t in tools])
    assert {t.name for t in tools} == set(ALL_TOOLS)
    for tool in tools:
        assert tool.title, tool.name
        assert tool.description and len(tool.description) > 20, tool.name
        ann = tool.annotations
        assert ann is not None, tool.name
        assert ann.read_only_hint is not None and ann.destructive_hint is not None, tool.name
        assert ann.idempotent_hint is not None and ann.open_world_hint is False, tool.name
        if ann.read_only_hint:
            assert ann.destructive_hint is False, tool.name
        for pname, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{pname} has no description"
            assert pname != "goal", f"{tool.name}: the goal argument is spelled goal_id"
        out = tool.output_schema
        assert out and out.get("properties"), f"{tool.name} has an empty output schema"
    by_name = {t.name: t for t in tools}
    assert by_name["goal_kb_read"].annotations.read_only_hint is True
    assert by_name["delete_goal"].annotations.destructive_hint is True
    assert "in" in by_name["schedule_intent"].input_schema["properties"]
    assert str(svc.kb.root) not in init_text
    assert len(init_text) > 1000  # the full-capability tools/list, as goalsui bench mcp sizes it


async def test_text_content_is_compact_json_and_holds_no_host_path(svc, world):
    root = str(svc.kb.root)
    async with mcp_session(svc, *full(world)) as s:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_goal", {}),
            ("list_goals", {}),
            ("goal_kb_list", {"recursive": True}),
            ("get_context", {}),
            ("setup_goal", {"name": "Spawned", "task": "t"}),
        ]
        for name, args in calls:
            res = await s.call_tool(name, args)
            text = text_of(res)
            assert not res.is_error, text
            assert json.loads(text) == res.structured_content
            assert "\n" not in text and ": " not in text.split('"task"')[0][:40], name
            assert root not in text, name
        missing = await error(s, "goal_kb_read", {"path": "nothing/here.md"})
    assert root not in missing


async def test_paging_walks_all_250_intents_of_a_goal(svc):
    goal = svc.goals.create("Busy", "many intents").goal_id
    at = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    made = {
        svc.intents.create(title=f"i{n}", instruction="x", kind="at", schedule=at, goal_id=goal).id
        for n in range(250)
    }
    seen: list[int] = []
    pages = 0
    async with mcp_session(svc, "--goal", goal) as s:
        cursor = None
        while True:
            args: dict[str, Any] = {"limit": 60}
            if cursor:
                args["cursor"] = cursor
            got = await ok(s, "list_intents", args)
            pages += 1
            assert got["total"] == 250
            seen.extend(i["id"] for i in got["intents"])
            if not got["truncated"]:
                assert got["next_cursor"] is None
                break
            cursor = got["next_cursor"]
        assert "cursor" in await error(s, "list_intents", {"cursor": "garbage"})
    assert pages == 5 and len(seen) == 250 and set(seen) == made


async def test_paging_walks_every_file_of_a_3000_file_tree_and_a_large_file(svc, world):
    gdir = svc.kb.goal_dir(world["goal"])
    for d in range(30):
        folder = gdir / "data" / f"d{d:02}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"f{f:03}.txt").write_text("x")
    expected = {str(p.relative_to(gdir)) for p in gdir.rglob("*") if not p.name.startswith(".")}
    big = "ä€𝄞 line of text\n" * 20_000  # about 400 KB of multi-byte characters
    (gdir / "big.md").write_text(big)
    expected.add("big.md")
    async with mcp_session(svc, *full(world)) as s:
        paths: list[str] = []
        cursor = None
        while True:
            args: dict[str, Any] = {"recursive": True, "limit": 1000}
            if cursor:
                args["cursor"] = cursor
            got = await ok(s, "goal_kb_list", args)
            paths.extend(e["path"] for e in got["entries"])
            if not got["truncated"]:
                break
            cursor = got["next_cursor"]
        assert got["total"] == len(expected)
        flat = await ok(s, "goal_kb_list", {"path": "data/d07"})
        assert flat["total"] == 100 and not flat["truncated"]
        chunks, offset, reads = [], 0, 0
        while offset is not None:
            part = await ok(s, "goal_kb_read", {"path": "big.md", "offset": offset})
            assert part["bytes"] <= 100 * 1024
            assert part["remaining_bytes"] == part["total_bytes"] - part["offset"] - part["bytes"]
            chunks.append(part["text"])
            offset = part["next_offset"]
            reads += 1
        odd = await ok(s, "goal_kb_read", {"path": "big.md", "offset": 1, "limit": 5})
    assert set(paths) == expected and len(paths) == len(expected)
    assert "".join(chunks) == big and reads >= 4
    assert odd["offset"] == 0 and big.encode().startswith(odd["text"].encode())


async def test_keys_are_scoped_and_a_changed_payload_is_refused(svc, world):
    at = (datetime.now(UTC) + timedelta(hours=3)).isoformat()
    call = {"title": "come back", "instruction": "check", "kind": "at", "schedule": at, "key": "k1"}
    async with mcp_session(svc, *full(world)) as a:
        mine = await ok(a, "schedule_intent", call)
        again = await ok(a, "schedule_intent", call)
        changed = await error(a, "schedule_intent", {**call, "instruction": "something else"})
    async with mcp_session(
        svc, "--goal", world["other"], "--thread", str(world["other_thread"])
    ) as b:
        theirs = await ok(b, "schedule_intent", {**call, "instruction": "their own"})
        before = counts(svc)
        refused = await error(b, "schedule_intent", {**call, "instruction": "changed again"})
        assert counts(svc) == before
    assert (
        mine["created"] and not again["created"] and again["intent"]["id"] == mine["intent"]["id"]
    )
    assert "k1" in changed and "another follow-up" in changed
    assert theirs["created"] is True
    assert theirs["intent"]["id"] != mine["intent"]["id"]
    assert theirs["intent"]["thread_id"] == world["other_thread"]
    assert "another follow-up" in refused and str(mine["intent"]["id"]) not in refused
    assert svc.intents.get(mine["intent"]["id"]).instruction == "check"


async def test_an_operator_session_without_a_key_is_idempotent_too(svc, world):
    call = {"title": "later", "instruction": "look", "kind": "at", "in": "2h"}
    async with mcp_session(svc, *full(world)) as s:
        first = await ok(s, "schedule_intent", call)
        again = await ok(s, "schedule_intent", call)
        await ok(s, "cancel_intent", {"intent_id": first["intent"]["id"]})
        after_end = await ok(s, "schedule_intent", call)
    assert first["created"] and not again["created"]
    assert again["intent"]["id"] == first["intent"]["id"]
    assert after_end["created"] and after_end["intent"]["id"] != first["intent"]["id"]


async def test_a_worker_without_goals_sees_only_its_own_goal(svc, world):
    run = run_of(svc, world["goal"], "reader", None)
    async with mcp_session(svc, "--run", str(run.id)) as s:
        listed = await ok(s, "list_goals", {})
        own = await ok(s, "get_goal", {})
        other = await error(s, "get_goal", {"goal_id": world["other"]})
        names = await tool_names(s)
        not_granted = await error(s, "todo_add", {"text": "x"})
        unknown = await error(s, "launch_rockets", {})
    assert [g["goal_id"] for g in listed["goals"]] == [world["goal"]] and listed["total"] == 1
    assert own["goal_id"] == world["goal"] and "path" not in own
    assert "goals" in other and "Neighbour" not in other
    assert not names & set(GOAL_CHANGING)
    assert "'todos'" in not_granted and "reader" in not_granted
    assert "no tool" in unknown


async def test_thread_only_and_private_sessions_get_no_goal_changing_tools(svc, world):
    async with mcp_session(svc, "--goal", world["goal"], "--thread", str(world["secret"])) as s:
        names = await tool_names(s)
        why = await error(s, "run_worker_now", {"worker": "writer"})
    assert "run_worker_now" not in names and not names & set(GOAL_CHANGING)
    assert "private" in why
    private_run = run_of(svc, world["goal"], "writer", world["secret"])
    async with mcp_session(svc, "--run", str(private_run.id)) as s:
        assert not (await tool_names(s)) & set(GOAL_CHANGING)
    async with mcp_session(svc, "--thread", str(world["thread"])) as s:
        names = await tool_names(s)
        why = await error(s, "setup_goal", {"name": "x", "task": "y"})
        goals = await ok(s, "list_goals", {})
    assert not names & set(GOAL_CHANGING) and "without a goal" in why
    assert goals["goals"] == []


async def test_an_oversized_state_yaml_is_refused_with_the_bound(svc, world):
    gdir = svc.kb.goal_dir(world["goal"])
    before = (gdir / "state.yaml").read_bytes()
    big = "notes: |\n" + "  a line of history that should go to the log\n" * 2000
    async with mcp_session(svc, *full(world)) as s:
        message = await error(s, "goal_kb_write", {"path": "state.yaml", "text": big})
        small = await ok(s, "goal_kb_write", {"path": "state.yaml", "text": "step: 2\n"})
    assert "65536" in message and "state" in message and "--" not in message
    assert small["bytes"] == len("step: 2\n")
    (gdir / "state.yaml").write_bytes(before)
    proc = run_cli(
        "kb", "write", world["goal"], "state.yaml", "-",
        kb=svc.kb.root, state=svc.state_dir, extra_env={"GOALSUI_DB": svc.db_url}, input=big,
    )  # fmt: skip
    assert proc.returncode == 1 and "65536" in proc.stderr
    assert (gdir / "state.yaml").read_bytes() == before


async def test_no_op_writes_write_nothing(svc, world):
    gdir = svc.kb.goal_dir(world["goal"])
    definition = gdir / "workers" / "writer" / "definition.yaml"
    async with mcp_session(svc, *full(world)) as s:
        done = await ok(s, "todo_complete", {"todo_id": world["todo"]})
        before = counts(svc), svc.threads.get(world["thread"]).revision
        again = await ok(s, "todo_complete", {"todo_id": world["todo"]})
        assert (counts(svc), svc.threads.get(world["thread"]).revision) == before
        reopened = await ok(s, "todo_reopen", {"todo_id": world["todo"]})
        reopened_again = await ok(s, "todo_reopen", {"todo_id": world["todo"]})
        schedule = {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}
        stat = definition.stat().st_mtime_ns
        with svc.store.read() as db:
            journal = len(db.exec(select(Journal)).all())
        same = await ok(s, "update_worker", {"worker": "writer", "schedule": schedule})
        with svc.store.read() as db:
            assert len(db.exec(select(Journal)).all()) == journal
        assert definition.stat().st_mtime_ns == stat
        moved = await ok(s, "update_worker", {"worker": "writer", "schedule": {"every": "2h"}})
    assert done["changed"] and not again["changed"] and again["revision"] == done["revision"]
    assert reopened["changed"] and not reopened_again["changed"]
    assert same["changed"] is False and moved["changed"] is True


async def test_get_context_and_instructions_tell_the_run_who_and_when_it_is(svc, world):
    run = run_of(svc, world["goal"], "writer", world["thread"], timeout_s=900)
    params_started = svc.runs.get(run.id).started_at
    async with mcp_session(svc, "--run", str(run.id)) as s:
        context = await ok(s, "get_context", {})
    assert context["run_id"] == run.id and context["goal_id"] == world["goal"]
    assert context["worker"] == "writer" and context["thread_id"] == world["thread"]
    assert context["goal_timezone"] == "Europe/Berlin"
    assert context["now_local"].endswith(("+01:00", "+02:00"))
    assert context["run_timeout_seconds"] == 900
    started = params_started if params_started.tzinfo else params_started.replace(tzinfo=UTC)
    deadline = datetime.fromisoformat(context["run_deadline"])
    assert abs((deadline - started - timedelta(seconds=900)).total_seconds()) < 1.5
    assert "schedule" in context["capabilities"] and "goals" in context["capabilities"]
    assert context["limits"]["state_max_bytes"] == 65536
    from goalsui.mcp.instructions import session_instructions
    from goalsui.mcp.scope import run_scope

    text = session_instructions(svc, run_scope(svc, run.id))
    assert f"run {run.id}" in text and "Europe/Berlin" in text
    assert "schedule_intent" in text and "todo_add" in text and "ends at" in text


async def test_schedule_intent_refuses_a_past_at_and_takes_in(svc, world):
    run = run_of(svc, world["goal"], "writer", world["thread"])
    async with mcp_session(svc, "--run", str(run.id)) as s:
        past = await error(
            s,
            "schedule_intent",
            {"title": "t", "instruction": "i", "kind": "at", "schedule": "2020-01-01T09:00:00Z"},
        )
        call = {"title": "t", "instruction": "i", "kind": "at", "in": "2h"}
        made = await ok(s, "schedule_intent", call)
        again = await ok(s, "schedule_intent", call)
        no_flag = await error(
            s, "schedule_intent", {"title": "t", "instruction": "i", "kind": "event"}
        )
        both = await error(s, "schedule_intent", {**call, "schedule": "2030-01-01T00:00:00Z"})
    assert "past" in past
    due = datetime.fromisoformat(made["intent"]["next_run_at"])
    assert timedelta(minutes=119) < due - datetime.now(UTC) <= timedelta(hours=2)
    assert again["created"] is False and again["intent"]["id"] == made["intent"]["id"]
    assert "--" not in no_flag and "event_source" in no_flag
    assert "not both" in both


async def test_thread_read_pages_the_sessions_own_thread(svc, world):
    for n in range(45):
        svc.threads.post(f"message {n}", thread_id=world["thread"], role="user")
    async with mcp_session(svc, *full(world)) as s:
        first = await ok(s, "thread_read", {})
        second = await ok(s, "thread_read", {"cursor": first["next_cursor"], "limit": 100})
        assert "unknown argument" in await error(s, "thread_read", {"thread_id": world["secret"]})
    assert first["total"] == 45 and len(first["messages"]) == 20 and first["truncated"]
    assert first["messages"][0]["content"] == "message 44"
    assert len(second["messages"]) == 25 and not second["truncated"]


async def test_delete_goal_needs_the_exact_id_as_confirmation(svc, world):
    async with mcp_session(svc, *full(world)) as s:
        wrong = await error(s, "delete_goal", {"goal_id": world["other"], "confirm": "neighbour"})
        assert svc.goals.get(world["other"])
        gone = await ok(s, "delete_goal", {"goal_id": world["other"], "confirm": world["other"]})
    assert "exact id" in wrong and gone["deleted"] is True
    assert world["other"] not in [g.goal_id for g in svc.goals.list()]
