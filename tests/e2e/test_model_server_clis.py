"""The real Claude Code and Codex, driven by the scripted model server (tests/model_server.py)
through a stdio ``goalsui mcp --goal G`` session: the model's tool calls reach goalsui and
the results come back to the model, then its answer ends the run.

The CLIs are installed from npm once (tests/agent_clis.py); without npm these tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.agent_clis import (
    AgentClis,
    claude_argv,
    claude_env,
    codex_argv,
    codex_env,
    codex_final_message,
    codex_mcp_stdio,
    mcp_config_file,
)

pytestmark = pytest.mark.slow

GOAL = "demo-pulse-05c0f5ca"  # a goal of the sample KB
SCRIPT = [
    {"call": "goal_kb_read", "arguments": {"path": "definition.yaml"}},
    {"call": "list_intents", "arguments": {}},
    {"call": "todo_list"},  # not served to an operator session: skipped, recorded missing
    {"answer": "Read the goal and its intents."},
]


def goalsui_mcp(service: Service) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of goalsui's stdio tool server for an operator session."""
    argv = [sys.executable, "-m", "goalsui", "--kb", str(service.kb.root)]
    argv += ["--state-dir", str(service.state_dir), "mcp", "--goal", GOAL]
    env = {"GOALSUI_DB": service.db_url, "GOALSUI_MCP_WARM": "0"}
    if "PYTHONPATH" in os.environ:  # Codex starts stdio servers with a trimmed environment
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return argv, env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        input="Look at the goal.",
        capture_output=True,
        text=True,
        timeout=180,
    )


def assert_played(server, prefix: str) -> None:
    assert server.missing == ["todo_list"]
    assert [name for name, _ in server.calls] == [f"{prefix}goal_kb_read", f"{prefix}list_intents"]
    offered = server.offered_tools
    assert len(offered) == 3  # one model request per call, then the answer
    for tools in offered:
        assert f"{prefix}goal_kb_read" in tools and f"{prefix}list_intents" in tools
        assert not any(t.endswith("todo_list") for t in tools)
    results = server.tool_results
    assert len(results) == 2
    assert "Demo pulse" in results[0]  # definition.yaml, read through goalsui
    assert "intents" in results[1]


def test_claude_calls_goalsui_tools(
    agent_clis: AgentClis, model_server, service: Service, tmp_path: Path
) -> None:
    server = model_server(SCRIPT)
    argv, env = goalsui_mcp(service)
    config = mcp_config_file(tmp_path / "mcp.json", "goalsui", argv, env)
    done = run(
        claude_argv(agent_clis, config),
        claude_env(server.url, tmp_path / "home"),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "Read the goal and its intents."
    assert result["permission_denials"] == []
    assert result["usage"]["input_tokens"] > 0
    assert_played(server, "mcp__goalsui__")
    # --tools "" leaves the model nothing but goalsui's tools
    assert all(t.startswith("mcp__goalsui__") for t in server.offered_tools[0])


def test_codex_calls_goalsui_tools(
    agent_clis: AgentClis, model_server, service: Service, tmp_path: Path
) -> None:
    server = model_server(SCRIPT)
    argv, env = goalsui_mcp(service)
    done = run(
        codex_argv(agent_clis, "--disable", "shell_tool", *codex_mcp_stdio("goalsui", argv, env)),
        codex_env(server.url, tmp_path / "codex-home"),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert codex_final_message(done.stdout) == "Read the goal and its intents."
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    usage = [e["usage"] for e in events if e.get("type") == "turn.completed"]
    assert usage and usage[-1]["input_tokens"] > 0
    assert_played(server, "mcp__goalsui__")
    # what Codex still offers of its own with every switch off (measured with 0.171.0)
    own = {t for t in server.offered_tools[0] if not t.startswith("mcp__goalsui__")}
    assert own == {
        "request_user_input",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    }


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_server_plays_one_step_per_request_and_answers_side_requests(model_server) -> None:
    """Without a CLI: the script advances by the tool results in the conversation, a
    request without tools and without an agent prompt is a side request."""
    server = model_server([{"call": "list_intents", "arguments": {"x": 1}}, {"answer": "fin"}])
    tools = [{"name": "mcp__goalsui__list_intents", "input_schema": {"type": "object"}}]
    ask = {"model": "m", "max_tokens": 10, "tools": tools}
    user = {"role": "user", "content": "hi"}
    first = post(f"{server.url}/v1/messages", {**ask, "messages": [user]})
    assert first["stop_reason"] == "tool_use"
    call = first["content"][-1]
    assert (call["name"], call["input"]) == ("mcp__goalsui__list_intents", {"x": 1})
    side = post(
        f"{server.url}/v1/messages", {"model": "haiku", "max_tokens": 5, "messages": [user]}
    )
    assert side["content"][0]["text"] == server.side_answer
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": "two intents"}
    messages = [user, {"role": "assistant", "content": first["content"]}]
    messages.append({"role": "user", "content": [result]})
    second = post(f"{server.url}/v1/messages", {**ask, "messages": messages})
    assert second["content"][0]["text"] == "fin"
    assert second["usage"]["input_tokens"] > 0
    assert server.tool_results == ["two intents"]
    assert [r.main for r in server.requests] == [True, False, True]
    count = post(f"{server.url}/v1/messages/count_tokens", {"messages": [user]})
    assert count["input_tokens"] > 0
