"""Conversations: ``goalsui thread say`` posts the user's message and a reply turn
answers it through a stand-in agent CLI (tests/scripts/agent_standin.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from tests.base_kit import run_cli
from tests.daemon_kit import Daemon
from tests.tui_kit import screen_text, settle
from tests.unit.test_runner_prompt import fenced_blocks

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


class Env:
    """A KB whose default runner is the stand-in agent, and the CLI against it."""

    def __init__(self, root: Path, mode: str) -> None:
        self.kb = root / "kb"
        self.kb.mkdir()
        self.state = root / "state"
        self.prompts = root / "prompts"
        argv = [sys.executable, str(SCRIPTS / "agent_standin.py"), str(self.prompts), mode]
        (self.kb / "goalsui.yaml").write_text(f"runner:\n  command: {json.dumps(argv)}\n")
        # The stand-in reaches the same KB and database through the environment.
        self.env = dict(os.environ, GOALSUI_KB=str(self.kb), GOALSUI_STATE_DIR=str(self.state))

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return run_cli(*args, env=self.env, timeout=300)

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def prompt_files(self) -> list[Path]:
        return sorted(self.prompts.glob("prompt-*.txt")) if self.prompts.exists() else []


def test_say_gets_exactly_one_reply_that_saw_the_thread(tmp_path: Path) -> None:
    env = Env(tmp_path, "echo")
    goal = env.json("goal", "create", "Move to Lisbon", "--task", "find a flat by March")
    thread = env.json("thread", "new", "Visa application")
    tid = str(thread["id"])
    items = "- [x] open item 00\n" + "".join(f"- [ ] open item {n:02d}\n" for n in range(1, 13))
    env.json("todo", "import", tid, items)
    env.json("thread", "say", tid, "The embassy wrote back: bring the lease.", "--no-reply")
    assert env.prompt_files() == []  # --no-reply: no turn

    said = env.json("thread", "say", tid, "What is still missing?")
    assert said["status"] == "ok", said
    reply = said["reply"]
    assert reply["content"].strip() == "Stand-in reply to: What is still missing?"
    assert reply["provenance"] == "Reply to: What is still missing?"
    assert reply["intent_id"] == said["reply_intent_id"] and reply["run_id"]
    shown = env.json("thread", "show", tid)
    assistant = [m for m in shown["messages"] if m["role"] == "assistant"]
    assert [m["id"] for m in assistant] == [reply["id"]]  # exactly one reply
    assert [m["content"] for m in shown["messages"] if m["role"] == "user"] == [
        "The embassy wrote back: bring the lease.",
        "What is still missing?",
    ]
    [run] = said["runs"]
    assert run["status"] == "ok" and run["id"] == reply["run_id"]

    [prompt_file] = env.prompt_files()
    prompt = prompt_file.read_text()
    assert prompt.rstrip().endswith("What is still missing?")  # the final message
    blocks = dict(fenced_blocks(prompt))
    recent = next(b for label, b in blocks.items() if "recent messages" in label)
    assert "bring the lease" in recent and "What is still missing?" not in recent
    todos = next(b for label, b in blocks.items() if "open todos" in label)
    assert todos.count("- [ ] open item") == 10  # at most ten, open ones only
    assert "open item 00" not in todos  # done
    goals = next(b for label, b in blocks.items() if "active goals" in label)
    assert goal["goal_id"] in goals
    # The run's transcript is kept like any other run's.
    log = env.run("runs", "--intent", str(said["reply_intent_id"]), "--json")
    assert log.returncode == 0 and json.loads(log.stdout)[0]["status"] == "ok"


async def test_a_failing_reply_is_retried_and_shows_in_failures(tmp_path: Path) -> None:
    env = Env(tmp_path, "fail-once")
    tid = str(env.json("thread", "new", "Inbox")["id"])
    done = env.run("thread", "say", tid, "Anything new?")
    assert done.returncode == 0, done.stderr
    assert "reply attempt 1 failed" in done.stderr and "exit" in done.stderr
    assert "Stand-in reply to: Anything new?" in done.stdout
    assert len(env.prompt_files()) == 2  # the failed attempt, then the retry
    failed = env.json("runs", "--failed")
    assert [(r["status"], r["attempt"]) for r in failed] == [("failed", 1)]
    shown = env.json("thread", "show", tid)
    assert len([m for m in shown["messages"] if m["role"] == "assistant"]) == 1
    # ... and the console's Failures screen lists the failed attempt.
    service = Service.open(env.kb, None, env.state)
    try:
        app = make_app(service, scheduler=False, watch=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(app, pilot)
            await pilot.press("F")
            await settle(app, pilot)
            text = screen_text(app)
            assert "Reply to: Anything new?" in text and "failed" in text
    finally:
        service.close()


def test_a_private_thread_answers_but_refuses_the_follow_up(tmp_path: Path) -> None:
    env = Env(tmp_path, "follow-up")
    tid = str(env.json("thread", "new", "Health", "--private")["id"])
    said = env.json("thread", "say", tid, "Remind me about the dentist.")
    assert said["status"] == "ok"
    content = said["reply"]["content"]
    assert "Stand-in reply to: Remind me about the dentist." in content
    assert "follow-up refused" in content and "private" in content
    intents = [i for i in env.json("intent", "list") if i["thread_id"] == int(tid)]
    assert [i["id"] for i in intents] == [said["reply_intent_id"]]  # no follow-up exists
    # An ordinary thread accepts the same follow-up: the refusal is the privacy rule.
    open_tid = str(env.json("thread", "new", "Errands")["id"])
    said = env.json("thread", "say", open_tid, "Remind me about the dentist.")
    assert "follow-up scheduled" in said["reply"]["content"]


def test_say_waits_for_a_running_daemon_instead_of_running_the_turn(tmp_path: Path) -> None:
    env = Env(tmp_path, "echo")
    tid = str(env.json("thread", "new", "Inbox")["id"])
    daemon = Daemon(env.kb, env.state)
    try:
        daemon.wait_ready()
        said = env.json("thread", "say", tid, "ping", "--pickup", "120")  # never run here
    finally:
        daemon.stop()
    assert said["status"] == "ok" and said["reply"]["content"].strip() == "Stand-in reply to: ping"
    assert any(f"run {said['reply']['run_id']}" in line for line in daemon.lines), daemon.lines


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["thread", "say", "1", "   "], "the message is empty"),
        (["thread", "say", "99", "hello"], "no thread 99"),
        (["thread", "say", "x", "hello"], "thread"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    env = Env(tmp_path, "echo")
    env.json("thread", "new", "Inbox")
    done = env.run(*args)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert env.json("thread", "show", "1")["messages"] == []
    assert env.json("intent", "list") == []


def test_without_a_runner_say_refuses_before_posting(tmp_path: Path) -> None:
    env = Env(tmp_path, "echo")
    (env.kb / "goalsui.yaml").write_text("silent_token: NOTHING_TO_REPORT\n")
    tid = str(env.json("thread", "new", "Inbox")["id"])
    done = env.run("thread", "say", tid, "hello?")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "no runner configured: set runner: in goalsui.yaml" in done.stderr
    assert env.json("thread", "show", tid)["messages"] == [] and env.json("intent", "list") == []
    env.json("thread", "say", tid, "just a note", "--no-reply")  # posting alone is fine
    assert [m["content"] for m in env.json("thread", "show", tid)["messages"]] == ["just a note"]
