"""Agent presets, placeholders, the per-run MCP config, secrets in argv, capabilities."""

from __future__ import annotations

import json
import shlex
import stat
import tomllib
from pathlib import Path

import pytest

from goalsui.domain.capabilities import ALL_TOOLS, tools_for
from goalsui.domain.redact import redact_argv
from goalsui.errors import KBError
from goalsui.kb.config import parse_worker
from goalsui.runners.presets import (
    McpLaunch,
    ToolEndpoint,
    TurnTools,
    expand_placeholders,
    preset_argv,
    preset_env,
    runner_argv,
    write_mcp_config,
)
from goalsui.runners.usage import ParsedOutput, parse_output
from goalsui.service import Service

LAUNCH = McpLaunch(
    "/usr/bin/python3", ("-m", "goalsui", "mcp", "--run", "7"), {"GOALSUI_DB": "sqlite:///x.db"}
)
ENDPOINT = ToolEndpoint("http://127.0.0.1:4321/mcp", "tok-secret")
TOOLS = TurnTools(LAUNCH, ENDPOINT)


def test_the_claude_preset_restricts_the_agent_to_goalsui_tools() -> None:
    argv = preset_argv("claude", TOOLS, model="sonnet", args=["--max-turns", "8"])
    assert argv == [
        "claude", "-p", "--output-format", "json",
        "--mcp-config", "{mcp_config}", "--strict-mcp-config",
        "--tools", "", "--allowedTools", "mcp__goalsui__*",
        "--model", "sonnet", "--max-turns", "8",
    ]  # fmt: skip
    with_tools = preset_argv("claude", TOOLS, allowed=["Read", "Grep"])
    assert with_tools[with_tools.index("--tools") + 1] == "Read,Grep"
    assert with_tools[with_tools.index("--allowedTools") + 1] == "mcp__goalsui__*,Read,Grep"
    # the config names the scheduler's endpoint, and Claude waits for it before its turn
    entry = TOOLS.config(always_load=True)["mcpServers"]["goalsui"]
    assert entry == {
        "type": "http",
        "url": ENDPOINT.url,
        "headers": {"Authorization": "Bearer tok-secret"},
        "alwaysLoad": True,
    }
    env = preset_env("claude", TOOLS)
    assert env["MCP_CONNECTION_NONBLOCKING"] == "0" and int(env["MCP_CONNECT_TIMEOUT_MS"]) >= 10_000
    assert "tok-secret" not in " ".join(argv)


def test_the_codex_preset_requires_the_server_and_approves_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.toml").write_text(
        '[mcp_servers.github]\ncommand = "gh-mcp"\n[mcp_servers.goalsui]\nurl = "x"\n'
    )
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    argv = preset_argv("codex", TOOLS, model="o4-mini")
    assert argv[:4] == ["codex", "exec", "--json", "--skip-git-repo-check"] and argv[-1] == "-"
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    parsed = tomllib.loads("\n".join(overrides))
    server = parsed["mcp_servers"]["goalsui"]
    assert server["url"] == ENDPOINT.url
    assert server["bearer_token_env_var"] == "GOALSUI_MCP_TOKEN"  # the token is not in argv
    assert server["required"] is True and server["default_tools_approval_mode"] == "approve"
    # Codex's own tools that its configuration can take away (docs/agents.md)
    assert parsed["web_search"] == "disabled"
    assert parsed["mcp_servers"]["github"] == {"enabled": False}  # the user's own server
    disabled = {argv[i + 1] for i, a in enumerate(argv) if a == "--disable"}
    assert disabled == {"multi_agent", "view_image", "goals", "shell_tool"}
    with_shell = preset_argv("codex", TOOLS, allowed=["shell"])
    assert "shell_tool" not in {
        with_shell[i + 1] for i, a in enumerate(with_shell) if a == "--disable"
    }
    assert "tok-secret" not in " ".join(argv)
    assert preset_env("codex", TOOLS)["GOALSUI_MCP_TOKEN"] == "tok-secret"
    assert argv[argv.index("--model") + 1] == "o4-mini"
    stdio = preset_argv("codex", TurnTools(LAUNCH))  # no listener: goalsui mcp over stdio
    server = tomllib.loads("\n".join(stdio[i + 1] for i, a in enumerate(stdio) if a == "-c"))[
        "mcp_servers"
    ]["goalsui"]
    assert server["command"] == LAUNCH.command and server["args"] == list(LAUNCH.args)
    assert server["required"] is True


def test_placeholders_and_the_config_file(tmp_path: Path) -> None:
    argv = runner_argv({"command": ["agent", "--mcp={mcp_config}", "run-{run_id}"]}, TOOLS)
    path = write_mcp_config(tmp_path / "runs", "7", TOOLS.config())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "mcpServers": {
            "goalsui": {
                "type": "http",
                "url": ENDPOINT.url,
                "headers": {"Authorization": "Bearer tok-secret"},
            }
        }
    }
    assert TOOLS.config(stdio=True) == {
        "mcpServers": {
            "goalsui": {
                "command": LAUNCH.command,
                "args": list(LAUNCH.args),
                "env": dict(LAUNCH.env),
            }
        }
    }
    assert expand_placeholders(argv, configs={"{mcp_config}": str(path)}, run_id=7) == [
        "agent",
        f"--mcp={path}",
        "run-7",
    ]
    path.unlink()
    assert not path.exists()
    launch = McpLaunch.for_run(Path("/kb"), Path("/state"), "sqlite:///db", 7, python="py")
    assert launch.args[-3:] == ("mcp", "--run", "7") and launch.env == {
        "GOALSUI_DB": "sqlite:///db"
    }


def test_agent_output_is_parsed_into_the_answer_and_its_usage() -> None:
    claude = json.dumps(
        {
            "type": "result",
            "result": "two todos ticked",
            "total_cost_usd": 0.03,
            "usage": {"input_tokens": 900, "output_tokens": 40},
            "modelUsage": {"claude-sonnet-4": {}},
        }
    )
    parsed = parse_output(claude)
    text, usage = parsed.text, parsed.usage
    assert text == "two todos ticked"
    assert usage is not None and (usage.tokens_in, usage.tokens_out, usage.cost_usd) == (
        900,
        40,
        0.03,
    )
    assert usage.model == "claude-sonnet-4"
    codex = "\n".join(
        json.dumps(e)
        for e in (
            {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
            {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 3}},
        )
    )
    parsed = parse_output(codex)
    assert parsed.text == "done" and parsed.usage is not None and parsed.usage.tokens_in == 10
    assert parse_output("not json at all") == ParsedOutput(None, "not json at all")
    assert parse_output('{"result": "x"}') == ParsedOutput(None, '{"result": "x"}')
    # a count no float can hold is unknown, not a crash of the turn
    huge = '{"type": "result", "result": "x", "usage": {"input_tokens": 1%s}}' % ("0" * 400)
    assert parse_output(huge) == ParsedOutput(None, "x")


def test_secrets_never_reach_a_stored_argv() -> None:
    argv = [
        "agent",
        "--api-key",
        "sk-live-123",
        "--token=abc",
        "GITHUB_TOKEN=ghp_1",
        "-c",
        'mcp_servers.goalsui.env={GOALSUI_DB = "postgresql://u:hunter2@db/x"}',
        "--model",
        "sonnet",
    ]
    shown = " ".join(redact_argv(argv))
    for secret in ("sk-live-123", "abc", "ghp_1", "hunter2"):
        assert secret not in shown
    assert "--model sonnet" in shown and "postgresql://u:***@db/x" in shown


def test_capabilities_select_tools_and_unknown_ones_are_kb_errors() -> None:
    assert "goal_kb_write" not in tools_for(["read_kb"], has_thread=True, private_thread=False)
    everything = tools_for(
        ["read_kb", "write_kb", "schedule", "todos", "threads", "goals", "nightshift"],
        has_thread=True,
        private_thread=False,
    )
    assert everything == set(ALL_TOOLS)
    private = tools_for(["schedule", "todos"], has_thread=True, private_thread=True)
    assert "schedule_intent" not in private and "todo_add" in private
    text = "schedule: {every: 1h}\ncapabilities: [read_kb, fly]\n"
    with pytest.raises(KBError) as caught:
        parse_worker(
            "w",
            {"schedule": {"every": "1h"}, "capabilities": ["read_kb", "fly"]},
            text,
            "g/workers/w/definition.yaml",
        )
    assert caught.value.line == 2 and "unknown capability 'fly'" in str(caught.value)
    with pytest.raises(KBError, match="unknown agent 'gpt'"):
        parse_worker("w", {"schedule": {"every": "1h"}, "runner": {"agent": "gpt"}}, "", "d")
    with pytest.raises(KBError, match="go with 'agent'"):
        parse_worker(
            "w", {"schedule": {"every": "1h"}, "runner": {"command": ["x"], "args": ["m"]}}, "", "d"
        )
    ok = parse_worker(
        "w",
        {
            "schedule": {"every": "1h"},
            "runner": {"agent": "claude", "model": "opus", "tools": ["Read"]},
        },
        "",
        "d",
    )
    assert ok.runner is not None
    assert ok.runner.as_dict() == {"agent": "claude", "model": "opus", "tools": ["Read"]}


def test_doctor_reports_an_unknown_capability(sample_kb: Path, make_service) -> None:
    definition = sample_kb / "demo-pulse-05c0f5ca" / "workers" / "pulse" / "definition.yaml"
    definition.write_text(
        definition.read_text().replace("capabilities: []", "capabilities: [teleport]")
    )
    service: Service = make_service(sample_kb)
    problems = [p for p in service.index.doctor() if "teleport" in p.message]
    assert problems and problems[0].path.endswith("pulse/definition.yaml") and problems[0].line


def test_the_goose_preset_adds_the_server_as_a_stdio_extension() -> None:
    launch = McpLaunch(
        "/opt/my python/bin/python3",
        ("-m", "goalsui", "mcp", "--run", "7"),
        {"GOALSUI_DB": "sqlite:////tmp/a b/x.db"},
    )
    argv = preset_argv(
        "goose", TurnTools(launch, ENDPOINT), model="gpt-5", args=["--max-turns", "20"]
    )
    assert argv[:4] == ["goose", "run", "--no-session", "--quiet"]
    assert argv[-2:] == ["-i", "-"]  # the prompt comes on stdin
    assert argv[argv.index("--model") + 1] == "gpt-5"
    assert argv[argv.index("--max-turns") + 1] == "20"
    extension = shlex.split(argv[argv.index("--with-extension") + 1])
    # ENV=value first, then the command; paths with spaces survive as one word each
    assert extension == [
        "GOALSUI_DB=sqlite:////tmp/a b/x.db",
        "/opt/my python/bin/python3", "-m", "goalsui", "mcp", "--run", "7",
    ]  # fmt: skip
    done = "Done: scheduled the follow-up.\n"
    assert parse_output(done) == ParsedOutput(None, done)  # usage unknown
