"""``goalsui worker show G W --argv``: what a worker's turn would get, before it runs;
``runs show`` prints a run's argv so it can be pasted back into a shell."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

from goalsui.domain.transcript import format_transcript
from tests.base_kit import run_cli

GOAL = "demo-pulse-05c0f5ca"


def cli(kb: Path, *args: str) -> str:
    done = run_cli(*args, kb=kb, state=kb.parent / "state", input="")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_claude_workers_turn_is_shown_with_its_config_and_no_token(sample_kb: Path) -> None:
    cli(sample_kb, "worker", "add", GOAL, "helper", "--every", "1h", "--runner", "claude",
        "--capabilities", "read_kb,todos,schedule")  # fmt: skip
    shown = json.loads(cli(sample_kb, "worker", "show", GOAL, "helper", "--argv", "--json"))
    assert shown["argv"][:2] == ["claude", "-p"] and shown["gets_tools"] is True
    assert "--strict-mcp-config" in shown["argv"]
    entry = shown["mcp_configs"]["mcp_config"]["mcpServers"]["goalsui"]
    assert entry["type"] == "http" and entry["alwaysLoad"] is True
    assert entry["headers"]["Authorization"] == "Bearer <per-run token>"
    assert {"GOALSUI_RUN_ID", "MCP_CONNECTION_NONBLOCKING", "GOALSUI_MCP_TOKEN"} <= set(
        shown["env"]
    )
    text = cli(sample_kb, "worker", "show", GOAL, "helper", "--argv")
    argv_line = next(line for line in text.splitlines() if line.startswith("argv:"))
    assert shlex.split(argv_line.removeprefix("argv:")) == shown["argv"]  # pasteable


def test_a_codex_worker_is_shown_with_its_overrides(sample_kb: Path) -> None:
    cli(sample_kb, "worker", "add", GOAL, "coder", "--every", "1h", "--runner", "codex")
    shown = json.loads(cli(sample_kb, "worker", "show", GOAL, "coder", "--argv", "--json"))
    argv = shown["argv"]
    overrides = tomllib.loads("\n".join(argv[i + 1] for i, a in enumerate(argv) if a == "-c"))
    server = overrides["mcp_servers"]["goalsui"]
    assert server["url"].startswith("http://127.0.0.1:") and server["required"] is True
    assert "GOALSUI_MCP_TOKEN" in shown["env"] and shown["mcp_configs"] == {}


def test_a_plain_command_gets_no_tools(sample_kb: Path) -> None:
    shown = json.loads(cli(sample_kb, "worker", "show", GOAL, "pulse", "--argv", "--json"))
    assert shown["gets_tools"] is False and shown["argv"]
    assert not any(name.startswith("MCP_") for name in shown["env"])


def test_runs_show_quotes_the_argv_for_a_shell() -> None:
    argv = ["claude", "-p", "--tools", "", "--allowedTools", "mcp__goalsui__*", "it's"]
    text = format_transcript(
        {"run_id": 1, "intent_id": 1, "status": "ok", "argv": argv, "tool_calls": []}
    )
    line = text.split("## argv\n", 1)[1].splitlines()[0]
    assert shlex.split(line) == argv
