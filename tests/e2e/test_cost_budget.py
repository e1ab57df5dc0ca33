"""Budgets: a spent budget skips the turn with reason ``budget``, alerts once per period,
and resets on its period in the budget's timezone (an injected clock moves time)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.domain.budget import Budget, BudgetLimit, Spend, exhausted, period_window
from goalsui.runners.base import TurnOutcome
from goalsui.runners.turn import run_turn
from goalsui.service import Service
from goalsui.store.models import Intent
from tests.base_kit import run_cli
from tests.cost_kit import agent_worker, record, start_run

# 12:00 UTC on a winter day is 13:00 in Berlin: the worker's day ends at 23:00 UTC.
START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:
    clock.set(START)
    return make_service(empty_kb, clock=clock)


async def turn(svc: Service, intent: Intent) -> TurnOutcome:
    run = start_run(svc, intent)
    outcome = await run_turn(svc, intent, run, cancel=asyncio.Event())
    record(svc, run, outcome)
    return outcome


def alerts(svc: Service) -> list[str]:
    return [j.detail for j in svc.journal.recent() if j.action == "alert"]


def goal_log(svc: Service, intent: Intent) -> str:
    logs = sorted((svc.kb.goal_dir(intent.goal_id) / "log").glob("*.md"))
    return "".join(p.read_text() for p in logs)


async def test_two_runs_spend_the_budget_the_third_is_skipped_and_alerts_once(
    svc: Service, clock
) -> None:
    intent = agent_worker(svc, "generic", "0.5", "100", "10", budget={"usd_per_day": 1.0})
    for _ in range(2):
        assert (await turn(svc, intent)).status == "ok"
        clock.advance(minutes=10)
    third = await turn(svc, intent)
    assert third.status == "skipped" and third.skipped
    assert third.reason is not None and third.reason.startswith("budget: ")
    assert "usd_per_day" in third.reason and "$1.00 of $1.00" in third.reason
    where = f"{intent.goal_id}/workers/coder/definition.yaml"
    assert f"Raise 'budget: usd_per_day' in {where}" in third.reason
    assert third.usage is None and third.output_path is None  # the agent never ran
    clock.advance(minutes=10)
    fourth = await turn(svc, intent)
    assert fourth.status == "skipped"
    (alert,) = alerts(svc)  # once per period, not once per skip
    assert "budget usd_per_day of worker" in alert and "resets at 2026-12-02T23:00" in alert
    assert goal_log(svc, intent).count("ALERT run") == 1
    # one minute before midnight in Berlin: still spent
    clock.set(datetime(2026, 12, 2, 22, 59, tzinfo=UTC))
    assert (await turn(svc, intent)).status == "skipped"
    # midnight in Berlin (23:00 UTC): a new day, a new budget
    clock.set(datetime(2026, 12, 2, 23, 0, tzinfo=UTC))
    assert (await turn(svc, intent)).status == "ok"
    assert (await turn(svc, intent)).status == "ok"
    spent = await turn(svc, intent)
    assert spent.status == "skipped" and "resets at 2026-12-03T23:00" in (spent.reason or "")
    assert len(alerts(svc)) == 2  # the new period alerts once more


async def test_goal_and_kb_budgets_and_tokens_count_every_worker_of_their_scope(
    svc: Service, clock
) -> None:
    a = agent_worker(
        svc, "claude", "0.01", "600", "100", name="alpha", goal_budget={"tokens_per_day": 1400}
    )
    b = svc.workers.intent(a.goal_id, "alpha")
    assert (await turn(svc, a)).status == "ok"  # 700 tokens
    assert (await turn(svc, b)).status == "ok"  # 1400: spent
    blocked = await turn(svc, a)
    assert blocked.status == "skipped" and "tokens_per_day of goal" in (blocked.reason or "")
    assert f"{a.goal_id}/definition.yaml" in (blocked.reason or "")
    # a KB budget in goalsui.yaml counts every run, in its own timezone
    (svc.kb.root / "goalsui.yaml").write_text(
        "budget:\n  usd_per_day: 0.03\n  timezone: America/New_York\n"
    )
    svc.config(reload=True)
    other = agent_worker(svc, "generic", "0.02", "1", "1", name="beta")
    assert (await turn(svc, other)).status == "ok"  # 0.01 + 0.01 + 0.02 = 0.04 >= 0.03
    kb_blocked = await turn(svc, other)
    assert kb_blocked.status == "skipped" and "of kb" in (kb_blocked.reason or "")
    assert "in goalsui.yaml" in (kb_blocked.reason or "")
    assert "resets at 2026-12-03T05:00" in (kb_blocked.reason or "")  # New York midnight


async def test_unknown_usage_never_spends_a_budget(svc: Service) -> None:
    intent = agent_worker(svc, "none", "0", "0", "0", budget={"usd_per_day": 0.01})
    for _ in range(3):
        assert (await turn(svc, intent)).status == "ok"
    assert svc.costs.day_total().unknown == 3


def test_night_window_and_day_window_in_local_time() -> None:
    tz = "Europe/Berlin"
    evening = datetime(2026, 12, 2, 19, 0, tzinfo=UTC)  # 20:00 local
    early = datetime(2026, 12, 3, 5, 0, tzinfo=UTC)  # 06:00 local, same night
    noon = datetime(2026, 12, 3, 11, 0, tzinfo=UTC)
    night = (datetime(2026, 12, 2, 17, 0, tzinfo=UTC), datetime(2026, 12, 3, 7, 0, tzinfo=UTC))
    assert period_window("night", evening, tz) == night
    assert period_window("night", early, tz) == night
    assert period_window("night", noon, tz) is None  # a night budget sleeps by day
    # the day of the spring-forward change is 23 hours long
    start, end = period_window("day", datetime(2026, 3, 29, 12, 0, tzinfo=UTC), tz)
    assert (end - start).total_seconds() == 23 * 3600
    limit = BudgetLimit("usd_per_night", 2.0)
    assert exhausted(limit, Spend(usd=1.99)) is None and exhausted(limit, Spend(usd=2.0)) == 2.0
    assert [x.name for x in Budget(usd_per_day=1, tokens_per_day=5).limits()] == [
        "usd_per_day",
        "tokens_per_day",
    ]


BAD_BUDGETS = {
    "budget:\n  usd_per_day: -1\n": ("usd_per_day", "at least 0"),
    "budget:\n  tokens_per_day: 1.5\n": ("tokens_per_day", "whole number"),
    "budget:\n  usd_per_week: 3\n": ("usd_per_week", "unknown field 'budget.usd_per_week'"),
    "budget: 5\n": ("budget", "must be a mapping"),
    "budget:\n  usd_per_day: lots\n": ("usd_per_day", "must be a number"),
    "budget:\n  timezone: Mars/Olympus\n": ("timezone", "Mars/Olympus"),
}


@pytest.mark.parametrize("text", list(BAD_BUDGETS))
def test_a_bad_budget_is_a_doctor_error_with_file_and_line(
    empty_kb: Path, tmp_path: Path, text: str
) -> None:
    goal = empty_kb / "g1"
    (goal / "workers" / "w").mkdir(parents=True)
    (goal / "definition.yaml").write_text("goal_id: g1\nname: G\n")
    worker_def = (
        'description: x\nschedule:\n  cron: "0 3 * * *"\nrunner:\n  command: [cat]\n' + text
    )
    (goal / "workers" / "w" / "definition.yaml").write_text(worker_def)
    (empty_kb / "goalsui.yaml").write_text("silent_token: QUIET\n" + text)
    proc = run_cli("doctor", "--json", kb=empty_kb, state=tmp_path / "s")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    problems = {p["path"]: p for p in json.loads(proc.stdout)["problems"]}
    key, words = BAD_BUDGETS[text]
    key_line = 6 + next(i for i, ln in enumerate(text.splitlines()) if key in ln)
    worker = problems["g1/workers/w/definition.yaml"]
    assert words in worker["message"] and worker["line"] == key_line
    config = problems["goalsui.yaml"]
    assert words in config["message"] and config["line"] == key_line - 4
