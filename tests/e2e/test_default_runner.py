"""A safe default runner: ``init`` chooses none (it offers the agent CLIs it finds), and a
turn without a runner fails with one line saying how to configure one."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from goalsui.domain.interrupts import CONFIG
from goalsui.kb.config import NO_RUNNER
from goalsui.runners.turn import run_turn
from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.base_kit import run_cli
from tests.e2e.test_runner_turn import start_run


def init(path: Path, env_path: str, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("init", path, *extra, extra_env={"PATH": env_path})


def fake_bin(folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    exe = folder / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)


def test_init_sets_no_runner_and_offers_nothing_without_agents(tmp_path: Path) -> None:
    empty = tmp_path / "bin-empty"
    empty.mkdir()
    done = init(tmp_path / "kb", str(empty))
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((tmp_path / "kb" / "goalsui.yaml").read_text())
    assert "runner" not in config and config["state_max_bytes"] == 64 * 1024
    assert "cat" not in (tmp_path / "kb" / "goalsui.yaml").read_text().split("#")[0]
    assert "no default runner is set" in done.stdout
    assert "agent CLIs found" not in done.stdout


def test_init_offers_the_agent_clis_on_path_without_choosing(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    fake_bin(bins, "codex")
    fake_bin(bins, "goose")
    done = init(tmp_path / "kb", str(bins))
    assert done.returncode == 0, done.stderr
    assert "agent CLIs found on PATH: codex, goose" in done.stdout
    assert "agent: codex" in done.stdout  # the offer, printed ...
    config = yaml.safe_load((tmp_path / "kb" / "goalsui.yaml").read_text())
    assert "runner" not in config  # ... not chosen
    as_json = json.loads(init(tmp_path / "kb2", str(bins), "--json").stdout)
    assert as_json["agents_on_path"] == ["codex", "goose"] and as_json["runner"] is None


@pytest.fixture
def svc(tmp_path: Path, make_service, clock) -> Service:
    empty = tmp_path / "bin-empty"
    empty.mkdir()
    assert init(tmp_path / "kb", str(empty)).returncode == 0
    return make_service(tmp_path / "kb", clock=clock)


async def test_a_turn_without_a_runner_fails_with_one_clear_line(svc: Service, clock) -> None:
    thread = svc.threads.create("inbox")
    intent = svc.intents.create(
        title="check", instruction="look", kind="at", schedule=clock.now.isoformat(),
        thread_id=thread.id,
    )  # fmt: skip
    outcome = await run_turn(svc, intent, start_run(svc, intent), cancel=asyncio.Event())
    assert (outcome.status, outcome.reason) == ("failed", NO_RUNNER)
    assert "goalsui.yaml" in NO_RUNNER and "docs/agents.md" in NO_RUNNER
    assert svc.threads.messages(thread.id) == []  # no fake success posted

    svc.intents.cancel(intent.id)
    scheduler = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        again = svc.intents.create(
            title="again", instruction="look", kind="at", schedule=clock.now.isoformat()
        )
        (run_id,) = await scheduler.tick()
        await scheduler.drain(timeout=60)
    finally:
        await scheduler.stop(grace=1)
    run = svc.runs.get(run_id)
    # a configuration error: failed once with reason "config: ...", held for the operator
    assert run.intent_id == again.id and (run.status, run.reason) == ("failed", CONFIG + NO_RUNNER)
    assert run.needs_review
    held = svc.intents.get(again.id)
    assert held.status == "paused" and held.next_run_at is None
    assert held.consecutive_failures == 0  # not counted toward auto-disable
    assert NO_RUNNER in (held.last_error or "") and "retry" in (held.last_error or "")


async def test_a_missing_program_fails_once_and_waits_for_the_operator(svc: Service, clock) -> None:
    scheduler = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        intent = svc.intents.create(
            title="typo", instruction="look", kind="cron", schedule="* * * * *",
            runner={"command": ["no-such-program-goalsui-test"]},
        )  # fmt: skip
        svc.intents.run_now(intent.id)
        (run_id,) = await scheduler.tick()
        await scheduler.drain(timeout=60)
        clock.advance(600)  # long past any retry back-off: nothing fires again
        assert await scheduler.tick() == []
    finally:
        await scheduler.stop(grace=1)
    run = svc.runs.get(run_id)
    assert run.status == "failed" and (run.reason or "").startswith(CONFIG)
    assert "program not found" in (run.reason or "")
    held = svc.intents.get(intent.id)
    assert held.status == "paused" and held.consecutive_failures == 0
    assert len(svc.runs.list(intent_id=intent.id)) == 1


def test_the_sample_kb_keeps_an_explicit_runner(sample_kb: Path, make_service) -> None:
    config = make_service(sample_kb).config()
    assert config.runner is not None and config.runner.command
