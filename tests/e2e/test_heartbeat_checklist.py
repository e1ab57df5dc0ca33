"""Heartbeats: an empty checklist ('' or an empty file) costs zero runner calls, run-now
included; a checklist is the operator's instruction, so it reaches the runner unfenced."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.base_kit import run_cli
from tests.unit.test_runner_prompt import fenced_blocks

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def kb(empty_kb: Path, tmp_path: Path) -> Path:
    capture = tmp_path / "prompt.txt"
    argv = [sys.executable, str(SCRIPTS / "run_capture_stdin.py"), str(capture)]
    (empty_kb / "goalsui.yaml").write_text(f"runner:\n  command: {json.dumps(argv)}\n")
    return empty_kb


def cli(kb: Path, state: Path, *args: str) -> dict:
    done = run_cli(*args, "--json", kb=kb, state=state)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def fire_due(kb: Path, state: Path) -> Service:
    service = Service.open(kb, None, state)
    scheduler = Scheduler(service, grace_seconds=1)
    try:
        await scheduler.tick()
        await scheduler.drain(timeout=60)
    finally:
        await scheduler.stop(grace=1)
    return service


@pytest.mark.parametrize("form", ["text", "file"])
async def test_an_empty_checklist_is_skipped_on_run_now_with_no_runner_call(
    kb: Path, tmp_path: Path, form: str
) -> None:
    state = tmp_path / "state"
    empty = tmp_path / "empty.md"
    empty.write_text("")
    checklist = "" if form == "text" else f"@{empty}"
    intent = cli(
        kb, state, "intent", "add", "--title", "inbox sweep", "--instruction", "look around",
        "--every", "30m", "--checklist", checklist,
    )  # fmt: skip
    cli(kb, state, "intent", "run-now", str(intent["id"]))
    service = await fire_due(kb, state)
    try:
        [run] = service.runs.list(intent_id=intent["id"])
        assert (run.status, run.reason, run.trigger) == ("skipped", "empty-checklist", "run-now")
        assert not (tmp_path / "prompt.txt").exists()  # the runner never started
        assert service.intents.get(intent["id"]).status == "active"  # it keeps its schedule
    finally:
        service.close()


async def test_a_checklist_reaches_the_runner_as_the_instruction_not_fenced(
    kb: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    thread = cli(kb, state, "thread", "new", "Inbox")
    cli(kb, state, "todo", "add", str(thread["id"]), "answer the landlord")
    intent = cli(
        kb, state, "intent", "add", "--title", "inbox sweep", "--instruction", "look around",
        "--every", "30m", "--thread", str(thread["id"]),
        "--checklist", "- [ ] visa email from the embassy?\n- [ ] new invoices",
    )  # fmt: skip
    cli(kb, state, "intent", "run-now", str(intent["id"]))
    service = await fire_due(kb, state)
    service.close()
    prompt = (tmp_path / "prompt.txt").read_text()
    instruction = prompt.split("## Instruction (the message to act on)", 1)[1]
    assert "- [ ] visa email from the embassy?\n- [ ] new invoices" in instruction
    labels = [label for label, _ in fenced_blocks(prompt)]
    assert not any("checklist" in label for label in labels)
    assert any("open todos" in label for label in labels)  # thread data stays fenced
