"""Agent CLI presets wired to goalsui's tools; argv placeholders ``{mcp_config}``,
``{mcp_stdio_config}``, ``{run_id}`` (docs/agents.md lists each flag)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goalsui.domain.agents import AGENTS

SERVER_NAME = "goalsui"
MCP_CONFIG = "{mcp_config}"
MCP_STDIO_CONFIG = "{mcp_stdio_config}"
RUN_ID = "{run_id}"
#: the environment variable that carries the run's bearer token (Codex reads it by name)
TOKEN_ENV = "GOALSUI_MCP_TOKEN"
URL_ENV = "GOALSUI_MCP_URL"
#: how long an agent may wait for goalsui's tools before its first request (ms)
CONNECT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class McpLaunch:
    """How an agent starts ``goalsui mcp --run ID`` over stdio: program, arguments, env."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def for_run(
        cls, kb_root: Path, state_dir: Path, db_url: str, run_id: int | str, *, python: str = ""
    ) -> McpLaunch:
        args: tuple[str, ...] = ("-m", "goalsui", "--kb", str(kb_root))
        args += ("--state-dir", str(state_dir), "mcp", "--run", str(run_id))
        return cls(python or sys.executable, args, {"GOALSUI_DB": db_url})

    def entry(self) -> dict[str, Any]:
        return {"command": self.command, "args": list(self.args), "env": dict(self.env)}


@dataclass(frozen=True)
class ToolEndpoint:
    """A live run's tools over Streamable HTTP: the URL and the run's bearer token."""

    url: str
    token: str = field(repr=False)

    @property
    def authorization(self) -> str:
        return f"Bearer {self.token}"

    def entry(self) -> dict[str, Any]:
        return {"type": "http", "url": self.url, "headers": {"Authorization": self.authorization}}


@dataclass(frozen=True)
class TurnTools:
    """Both ways a turn's agent can reach its tools; ``http`` is None when not served."""

    stdio: McpLaunch
    http: ToolEndpoint | None = None

    def config(self, *, stdio: bool = False, always_load: bool = False) -> dict[str, Any]:
        """The standard ``mcpServers`` document (Claude Code's --mcp-config shape)."""
        entry = self.stdio.entry() if stdio or self.http is None else self.http.entry()
        if always_load:
            entry["alwaysLoad"] = True  # Claude Code: wait for this server before the turn
        return {"mcpServers": {SERVER_NAME: entry}}


def _toml(value: Any) -> str:
    """A TOML value for codex ``-c key=value`` (strings, lists and tables of strings)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    # JSON's booleans, integers, strings and arrays of them are valid TOML; anything
    # else is a TypeError
    return json.dumps(value)


def _codex_overrides(tools: TurnTools) -> list[str]:
    """``-c`` pairs: goalsui's server (required, calls approved) and Codex's own tools off."""
    launch, http = tools.stdio, tools.http
    server: dict[str, Any] = (
        {"url": http.url, "bearer_token_env_var": TOKEN_ENV}
        if http is not None
        else {"command": launch.command, "args": list(launch.args), "env": dict(launch.env)}
    )
    server |= {"required": True, "default_tools_approval_mode": "approve"}
    server["startup_timeout_sec"] = CONNECT_TIMEOUT_MS // 1000
    pairs = {f"mcp_servers.{SERVER_NAME}.{key}": value for key, value in server.items()}
    pairs["web_search"] = "disabled"
    # the user's own MCP servers stay out of the turn (their names from config.toml)
    pairs |= {f"mcp_servers.{name}.enabled": False for name in codex_user_servers()}
    return [arg for key, value in pairs.items() for arg in ("-c", f"{key}={_toml(value)}")]


#: Codex features that offer the model tools of Codex's own (docs/agents.md); ``shell``
#: goes only when the worker's ``tools`` does not name it
CODEX_FEATURES_OFF = ("multi_agent", "view_image", "goals")
CODEX_SHELL = "shell"


def codex_user_servers() -> list[str]:
    """MCP servers of the user's Codex config but goalsui's own; [] when there is none."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    try:
        with (home / "config.toml").open("rb") as fh:
            servers = tomllib.load(fh).get("mcp_servers")
    except (OSError, tomllib.TOMLDecodeError):
        return []
    if not isinstance(servers, dict):
        return []
    return sorted(
        name
        for name in servers
        if name != SERVER_NAME and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(name))
    )


def preset_argv(
    agent: str,
    tools: TurnTools,
    *,
    model: str | None = None,
    args: Sequence[str] = (),
    allowed: Sequence[str] = (),
) -> list[str]:
    """The argv of an agent preset; ``allowed`` are tools of the CLI's own the worker allows."""
    chosen = ["--model", model] if model else []
    if agent == "claude":
        permitted = ",".join([f"mcp__{SERVER_NAME}__*", *allowed])
        argv = ["claude", "-p", "--output-format", "json"]
        argv += ["--mcp-config", MCP_CONFIG, "--strict-mcp-config"]
        argv += ["--tools", ",".join(allowed), "--allowedTools", permitted]
        return [*argv, *chosen, *args]
    if agent == "codex":
        argv = ["codex", "exec", "--json", "--skip-git-repo-check", *_codex_overrides(tools)]
        off = [*CODEX_FEATURES_OFF, *([] if CODEX_SHELL in allowed else ["shell_tool"])]
        for feature in off:
            argv += ["--disable", feature]
        return [*argv, *chosen, *args, "-"]
    if agent == "goose":
        # goose takes a stdio extension as one command line: ENV=value ... command args
        launch = tools.stdio
        env = [f"{k}={shlex.quote(v)}" for k, v in launch.env.items()]
        extension = " ".join([*env, *(shlex.quote(a) for a in (launch.command, *launch.args))])
        argv = ["goose", "run", "--no-session", "--quiet", "--with-extension", extension]
        return [*argv, *chosen, *args, "-i", "-"]
    raise ValueError(f"unknown agent preset {agent!r} (known: {', '.join(AGENTS)})")


def preset_env(agent: str | None, tools: TurnTools) -> dict[str, str]:
    """The agent's tool environment: the endpoint and the CLI's wait-for-servers settings."""
    http = tools.http
    env = {URL_ENV: http.url, TOKEN_ENV: http.token} if http is not None else {}
    if agent == "claude":
        wait = str(CONNECT_TIMEOUT_MS)  # Claude Code waits for its servers before the turn
        env |= {"MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": wait}
    return env


def runner_argv(spec: Mapping[str, Any], tools: TurnTools) -> list[str]:
    """A runner's argv before placeholders: its ``command``, or its preset's."""
    if spec.get("agent"):
        return preset_argv(
            str(spec["agent"]),
            tools,
            model=spec.get("model"),
            args=[str(a) for a in spec.get("args") or ()],
            allowed=[str(t) for t in spec.get("tools") or ()],
        )
    return [str(x) for x in spec.get("command") or []]


def expand_placeholders(
    argv: Sequence[str], *, configs: Mapping[str, str], run_id: int
) -> list[str]:
    """``{run_id}`` and the config placeholders (``configs``: placeholder -> path)."""
    out = []
    for arg in argv:
        arg = arg.replace(RUN_ID, str(run_id))
        for placeholder, path in configs.items():
            arg = arg.replace(placeholder, path)
        out.append(arg)
    return out


def mcp_documents(
    argv: Sequence[str], tools: TurnTools, agent: str | None
) -> dict[str, dict[str, Any]]:
    """The MCP config document of each config placeholder ``argv`` uses, in a fixed order."""
    return {
        p: tools.config(stdio=p == MCP_STDIO_CONFIG, always_load=agent == "claude")
        for p in (MCP_CONFIG, MCP_STDIO_CONFIG)
        if any(p in arg for arg in argv)
    }


def write_mcp_config(folder: Path, name: str, document: Mapping[str, Any]) -> Path:
    """Write a run's MCP config (mode 0600: it holds the run's token); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.mcp.json"
    path.unlink(missing_ok=True)  # a leftover of a crashed attempt: created afresh with our mode
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(document, fh, indent=2)
    return path
