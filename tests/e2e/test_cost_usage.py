"""Usage per run: parsed from the agent's own output, stored on the run, shown by the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from goalsui.runners.base import TurnOutcome, Usage
from goalsui.runners.turn import run_turn
from goalsui.runners.usage import parse_output
from goalsui.service import Service
from tests.base_kit import run_cli
from tests.cost_kit import agent_worker, record, start_run


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:
    return make_service(empty_kb, clock=clock)


def test_claude_result_object_gives_tokens_cost_model_and_the_result_text() -> None:
    doc = {
        "type": "result",
        "subtype": "success",
        "result": "all done",
        "total_cost_usd": 0.0421,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 200,
            "cache_read_input_tokens": 3000,
            "output_tokens": 77,
        },
        "modelUsage": {
            "claude-haiku": {"outputTokens": 2, "costUSD": 0.0001},
            "claude-sonnet-4": {"outputTokens": 75, "costUSD": 0.042},
        },
    }
    parsed = parse_output(json.dumps(doc) + "\n")
    assert parsed.usage == Usage(3210, 77, 0.0421, "claude-sonnet-4")
    assert parsed.text == "all done"
    # --verbose prints every message as one array; stream-json one per line
    init = {"type": "system", "subtype": "init", "model": "claude-opus-4"}
    array = parse_output(json.dumps([init, {"type": "assistant"}, doc]))
    stream = parse_output("\n".join(json.dumps(m) for m in (init, doc)))
    assert array.usage == stream.usage == Usage(3210, 77, 0.0421, "claude-opus-4")


def test_codex_events_new_and_old_shapes() -> None:
    new = [
        {"type": "thread.started", "thread_id": "x"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "turn.completed", "usage": {"input_tokens": 100, "output_tokens": 5}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "final"}},
        {"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": 7}},
    ]
    parsed = parse_output("\n".join(json.dumps(e) for e in new))
    assert parsed.usage == Usage(150, 12, None, None)
    assert parsed.text == "final"
    old = [
        {"id": "0", "msg": {"type": "session_configured", "model": "gpt-5-codex"}},
        {"id": "1", "msg": {"type": "token_count", "input_tokens": 10, "output_tokens": 1}},
        {"id": "2", "msg": {"type": "agent_message", "message": "old final"}},
        {
            "id": "3",
            "msg": {
                "type": "token_count",
                "info": {"total_token_usage": {"input_tokens": 30, "output_tokens": 4}},
            },
        },
    ]
    parsed = parse_output("\n".join(json.dumps(e) for e in old))
    assert parsed.usage == Usage(30, 4, None, "gpt-5-codex")
    assert parsed.text == "old final"


def test_generic_line_is_read_and_removed_and_bad_values_are_unknown() -> None:
    out = (
        'result line\n{"goalsui_usage": {"tokens_in": 9, "tokens_out": 3, "cost_usd": 0.5}}\nmore\n'
    )
    parsed = parse_output(out)
    assert parsed.usage == Usage(9, 3, 0.5, None)
    assert parsed.text == "result line\nmore\n"
    bad = '{"goalsui_usage": {"tokens_in": -1, "tokens_out": "many", "cost_usd": 1e400}}\n'
    assert parse_output(bad).usage is None  # nothing valid: unknown, not zero
    partial = parse_output('{"goalsui_usage": {"cost_usd": 0.25, "tokens_in": true}}\n')
    assert partial.usage == Usage(None, None, 0.25, None)


@pytest.mark.parametrize(
    "text",
    [
        "plain text result\n",
        '{"type": "note", "result": "not claude"}\n',
        '{"id": 1, "msg": "a log line, not a codex event"}\n',
        "[1, 2, 3]\n",
        "",
    ],
)
def test_other_output_has_unknown_usage_and_is_delivered_unchanged(text: str) -> None:
    parsed = parse_output(text)
    assert parsed.usage is None
    assert parsed.text == text


@pytest.mark.parametrize("shape", ["claude", "generic", "codex"])
async def test_a_turn_of_a_usage_reporting_agent_carries_its_usage(
    svc: Service, shape: str
) -> None:
    intent = agent_worker(svc, shape, "0.25", "1200", "340", "sonnet-x")
    run = start_run(svc, intent)
    outcome = await run_turn(svc, intent, run, cancel=asyncio.Event())
    assert outcome.status == "ok"
    cost = None if shape == "codex" else 0.25
    model = None if shape == "codex" else "sonnet-x"
    assert outcome.usage == Usage(1200, 340, cost, model)
    # the result delivered is the agent's text, not its JSON envelope or usage line
    delivered = outcome.outbox_path.read_text()
    assert delivered.startswith("## agent: done with sonnet-x")
    assert "goalsui_usage" not in delivered and "total_cost_usd" not in delivered


async def test_usage_is_stored_and_shown_and_unknown_is_never_zero(svc: Service) -> None:
    intent = agent_worker(svc, "claude", "0.125", "1000", "50", "opus-y")
    first = start_run(svc, intent)
    record(svc, first, await run_turn(svc, intent, first, cancel=asyncio.Event()), seconds=3)
    silent = agent_worker(svc, "none", "0", "0", "0", name="quiet")
    second = start_run(svc, silent)
    record(svc, second, await run_turn(svc, silent, second, cancel=asyncio.Event()))
    stored = svc.runs.get(first.id)
    assert (stored.tokens_in, stored.tokens_out, stored.cost_usd, stored.model) == (
        1000,
        50,
        0.125,
        "opus-y",
    )
    listing = run_cli("runs", "--json", kb=svc.kb.root, state=svc.state_dir, timeout=60)
    assert listing.returncode == 0, listing.stderr
    runs = {r["id"]: r for r in json.loads(listing.stdout)}
    assert runs[first.id]["usage"] == {
        "tokens_in": 1000,
        "tokens_out": 50,
        "cost_usd": 0.125,
        "model": "opus-y",
    }
    assert runs[first.id]["duration_s"] == 3.0
    assert runs[second.id]["usage"] == {
        "tokens_in": None,
        "tokens_out": None,
        "cost_usd": None,
        "model": None,
    }
    table = run_cli("runs", kb=svc.kb.root, state=svc.state_dir, timeout=60).stdout
    rows = {line.split()[0]: line for line in table.splitlines()[1:] if line.strip()}
    assert "$0.1250" in rows[str(first.id)] and "1.1k" in rows[str(first.id)]
    assert rows[str(second.id)].rstrip().endswith("unknown  unknown")
    assert "$0.0000" not in rows[str(second.id)]


async def test_a_runner_model_reaches_the_agent_argv_and_environment(svc: Service) -> None:
    intent = agent_worker(svc, "generic", "0.01", "10", "1", "{model}", model="cheap-haiku")
    assert intent.runner is not None and intent.runner["model"] == "cheap-haiku"
    run = start_run(svc, intent)
    outcome = await run_turn(svc, intent, run, cancel=asyncio.Event())
    assert outcome.usage is not None and outcome.usage.model == "cheap-haiku"


async def test_the_morning_report_has_cost_per_worker_per_night_and_top_spenders(
    svc: Service, clock
) -> None:
    from datetime import UTC, datetime

    from goalsui.runners.report import compile_report

    clock.set(datetime(2026, 12, 1, 21, 0, tzinfo=UTC))  # the night before: 22:00 Berlin
    pricey = agent_worker(svc, "claude", "0.40", "900", "100", "big-model", name="pricey")
    run = start_run(svc, pricey)
    record(svc, run, await run_turn(svc, pricey, run, cancel=asyncio.Event()))
    clock.set(datetime(2026, 12, 2, 21, 0, tzinfo=UTC))  # this night
    cheap = svc.workers.intent(pricey.goal_id, "pricey")
    runs = []
    for _ in range(2):
        run = start_run(svc, cheap)
        record(svc, run, await run_turn(svc, cheap, run, cancel=asyncio.Event()))
        runs.append(run)
        clock.advance(minutes=30)
    silent = start_run(svc, cheap)
    record(svc, silent, TurnOutcome("silent"))  # a run that reported no usage
    clock.set(datetime(2026, 12, 3, 7, 0, tzinfo=UTC))
    report = compile_report(svc, pricey.goal_id, None, svc.now(), tz="Europe/Berlin", write=False)
    text = report.markdown
    section = text[text.index("## Cost") : text.index("## Timeline")]
    assert "- Cost: $0.8000 reported by 2 run(s), 2.0k tokens; 1 run(s) reported no usage" in text
    rows = [line for line in section.splitlines() if line.startswith("| pricey")]
    ids = f"runs {runs[0].id}, {runs[1].id}, {silent.id}"
    assert rows == [f"| pricey | 2 | $0.8000 | 2.0k | 1 | {ids} |"]
    assert f"- pricey run {runs[0].id}: $0.4000, big-model" in section
    assert "- Night of 2026-12-02: $0.8000, 2.0k tokens, 2 run(s) with usage, 1 without" in section
    assert "$0.0000" not in text  # unknown is never shown as zero
    assert "- Night of 2026-12-01: $0.4000, 1.0k tokens, 1 run(s) with usage, 0 without" in section
    assert "- Night of 2026-11-30: unknown, unknown tokens, 0 run(s) with usage" in section
