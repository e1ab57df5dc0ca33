"""Shared helpers of the cost tests: a KB whose worker is the stand-in agent, and the
run bookkeeping the scheduler does around run_turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goalsui.kb.layout import WorkerSeed
from goalsui.runners.base import TurnOutcome
from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun

SCRIPTS = Path(__file__).resolve().parent / "scripts"
AGENT = str(SCRIPTS / "agent_usage.py")


def agent_worker(
    svc: Service,
    *agent_args: str,
    name: str = "coder",
    budget: dict[str, Any] | None = None,
    goal_budget: dict[str, Any] | None = None,
    model: str | None = None,
) -> Intent:
    """A goal with one worker whose runner is the stand-in agent with ``agent_args``."""
    runner: dict[str, Any] = {"command": ["{python}", AGENT, *agent_args]}
    if model:
        runner["model"] = model
    definition: dict[str, Any] = {
        "schedule": {"cron": "30 20 * * *", "timezone": "Europe/Berlin"},
        "runner": runner,
        "timeout": "30s",
    }
    if budget:
        definition["budget"] = budget
    view = svc.goals.create(
        "Cost Test", "spend a little", [WorkerSeed(name, definition, prompt="# w\n")]
    )
    if goal_budget:
        path = svc.kb.goal_dir(view.goal_id) / "definition.yaml"
        import yaml

        data = yaml.safe_load(path.read_text())
        data["budget"] = goal_budget
        path.write_text(yaml.safe_dump(data))
    return svc.workers.intent(view.goal_id, name)


def start_run(svc: Service, intent: Intent) -> IntentRun:
    """The ``running`` run row the scheduler inserts before it calls run_turn."""
    now = svc.now()
    with svc.store.write() as s:
        run = IntentRun(
            intent_id=intent.id,
            status="running",
            planned_at=now,
            started_at=now,
        )
        s.add(run)
        s.flush()
    return run


def record(svc: Service, run: IntentRun, outcome: TurnOutcome, seconds: float = 2.0) -> IntentRun:
    """Record ``outcome`` on the run the way the scheduler's outcome writer does."""
    from datetime import timedelta

    with svc.store.write() as s:
        row = s.get(IntentRun, run.id)
        assert row is not None
        row.status = outcome.status
        row.reason = outcome.reason
        row.finished_at = row.started_at + timedelta(seconds=seconds)
        if outcome.usage is not None:
            row.tokens_in = outcome.usage.tokens_in
            row.tokens_out = outcome.usage.tokens_out
            row.cost_usd = outcome.usage.cost_usd
            row.model = outcome.usage.model
        s.add(row)
    return svc.runs.get(run.id)
