"""Agent CLI presets: ``runner: {agent: claude}`` becomes an argv wired to ``goalsui mcp``.

A preset's argv gives the agent goalsui's tool server for this run and nothing else it
did not ask for. Any argv runner may use two placeholders inside its arguments:
``{mcp_config}`` (the path of a per-run JSON file ``{"mcpServers": {"goalsui": ...}}``,
written before the run and removed after it) and ``{run_id}``. docs/agents.md lists
each flag and where it is documented.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from goalsui.runners.base import Usage

__all__ = [
    "AGENTS",
    "MCP_CONFIG",
    "RUN_ID",
    "McpLaunch",
    "expand_placeholders",
    "needs_config",
    "remove_mcp_config",
    "write_mcp_config",
    "parse_agent_output",
    "preset_argv",
    "runner_argv",
]

from goalsui.domain.agents import AGENTS  # re-exported for callers

SERVER_NAME = "goalsui"
MCP_CONFIG = "{mcp_config}"
RUN_ID = "{run_id}"


@dataclass(frozen=True)
class McpLaunch:
    """How an agent starts ``goalsui mcp --run ID``: program, arguments, environment."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def for_run(
        cls, kb_root: Path, state_dir: Path, db_url: str, run_id: int, *, python: str | None = None
    ) -> McpLaunch:
        args: tuple[str, ...] = ("-m", "goalsui", "--kb", str(kb_root))
        args += ("--state-dir", str(state_dir), "mcp", "--run", str(run_id))
        return cls(python or sys.executable, args, {"GOALSUI_DB": db_url})

    def hosted(self, socket: Path | None) -> McpLaunch:
        """This launch, told to try the warm host at ``socket`` first (None: unchanged)."""
        if socket is None:
            return self
        return replace(self, env={**self.env, "GOALSUI_MCP_HOST": str(socket)})

    def config(self) -> dict[str, Any]:
        """The standard ``mcpServers`` document (Claude Code's --mcp-config shape)."""
        server = {"command": self.command, "args": list(self.args), "env": dict(self.env)}
        return {"mcpServers": {SERVER_NAME: server}}


def _toml(value: Any) -> str:
    """A TOML value for codex ``-c key=value`` (strings, lists and tables of strings)."""
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def preset_argv(
    agent: str,
    launch: McpLaunch,
    *,
    model: str | None = None,
    args: Sequence[str] = (),
    tools: Sequence[str] = (),
) -> list[str]:
    """The argv of an agent preset; ``tools`` are extra tools the worker allows."""
    if agent == "claude":
        allowed = ",".join([f"mcp__{SERVER_NAME}__*", *tools])
        argv = ["claude", "-p", "--output-format", "json"]
        argv += ["--mcp-config", MCP_CONFIG, "--strict-mcp-config"]
        argv += ["--tools", ",".join(tools), "--allowedTools", allowed]
        if model:
            argv += ["--model", model]
        return argv + list(args)
    if agent == "codex":
        prefix = f"mcp_servers.{SERVER_NAME}"
        argv = ["codex", "exec", "--json", "--skip-git-repo-check"]
        argv += ["-c", f"{prefix}.command={_toml(launch.command)}"]
        argv += ["-c", f"{prefix}.args={_toml(list(launch.args))}"]
        argv += ["-c", f"{prefix}.env={_toml(dict(launch.env))}"]
        if model:
            argv += ["--model", model]
        return [*argv, *args, "-"]
    if agent == "goose":
        # goose takes a stdio extension as one command line: ENV=value ... command args
        env = [f"{k}={shlex.quote(v)}" for k, v in launch.env.items()]
        extension = " ".join([*env, *(shlex.quote(a) for a in (launch.command, *launch.args))])
        argv = ["goose", "run", "--no-session", "--quiet", "--with-extension", extension]
        if model:
            argv += ["--model", model]
        return [*argv, *args, "-i", "-"]
    raise ValueError(f"unknown agent preset {agent!r} (known: {', '.join(AGENTS)})")


def runner_argv(spec: Mapping[str, Any], launch: McpLaunch) -> list[str]:
    """A runner's argv before placeholders: its ``command``, or its preset's."""
    if spec.get("agent"):
        return preset_argv(
            str(spec["agent"]),
            launch,
            model=spec.get("model"),
            args=[str(a) for a in spec.get("args") or ()],
            tools=[str(t) for t in spec.get("tools") or ()],
        )
    return [str(x) for x in spec.get("command") or []]


def expand_placeholders(argv: Sequence[str], *, mcp_config: str | None, run_id: int) -> list[str]:
    """``{run_id}`` and ``{mcp_config}`` replaced inside every argument."""
    out = []
    for arg in argv:
        arg = arg.replace(RUN_ID, str(run_id))
        if mcp_config is not None:
            arg = arg.replace(MCP_CONFIG, mcp_config)
        out.append(arg)
    return out


def needs_config(argv: Sequence[str]) -> bool:
    return any(MCP_CONFIG in arg for arg in argv)


def write_mcp_config(folder: Path, run_id: int, launch: McpLaunch) -> Path:
    """Write the run's MCP config (mode 0600: it names the database); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}.mcp.json"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a leftover of a crashed attempt: created afresh with our mode
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(launch.config(), fh, indent=2)
    return path


def remove_mcp_config(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _claude_output(stdout: str) -> tuple[str, Usage] | None:
    data = json.loads(stdout)
    if not isinstance(data, dict) or "result" not in data:
        return None
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    cost = data.get("total_cost_usd")
    model_usage = data.get("modelUsage")
    model = next(iter(model_usage), None) if isinstance(model_usage, dict) else None
    return str(data["result"] or ""), Usage(
        tokens_in=_int(usage.get("input_tokens")),
        tokens_out=_int(usage.get("output_tokens")),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        model=model,
    )


def _codex_output(stdout: str) -> tuple[str, Usage] | None:
    text, tokens_in, tokens_out = None, None, None
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        item = event.get("item")
        if isinstance(item, dict) and item.get("type") == "agent_message":
            text = str(item.get("text") or "")
        usage = event.get("usage")
        if event.get("type") == "turn.completed" and isinstance(usage, dict):
            tokens_in = _int(usage.get("input_tokens"))
            tokens_out = _int(usage.get("output_tokens"))
    if text is None:
        return None
    return text, Usage(tokens_in=tokens_in, tokens_out=tokens_out)


def parse_agent_output(agent: str | None, stdout: str) -> tuple[str, Usage | None]:
    """A preset's answer text and usage from its JSON output; other output as it is."""
    parsers = {"claude": _claude_output, "codex": _codex_output}
    parser = parsers.get(agent or "")
    if parser is None:
        return stdout, None
    try:
        parsed = parser(stdout)
    except (ValueError, TypeError):
        parsed = None
    return parsed if parsed is not None else (stdout, None)
