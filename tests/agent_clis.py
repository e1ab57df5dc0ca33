"""The real agent CLIs (Claude Code and Codex) for tests, installed from npm once per machine.

``ensure_agent_clis()`` installs the pinned versions with ``npm install --prefix CACHE``
into ``$GOALSUI_AGENT_CLI_CACHE`` (default ``~/.cache/goalsui-tests/agent-clis/<versions>``)
and returns their binaries; a stamp file makes later calls instant and a file lock keeps
two pytest-xdist workers from installing at once. Without npm, or when the install
fails, it returns None and ``agent_clis_or_reason()`` says why (tests skip with that).

The rest builds what each CLI needs to run against a scripted model server
(tests/model_server.py), as measured with these versions (docs/agents.md, "How the presets
are checked"):

- Claude: ``claude_env`` (``ANTHROPIC_BASE_URL``, a dummy key, a scratch ``HOME``) and
  ``claude_argv`` (``-p --output-format json --mcp-config F --strict-mcp-config --tools ""
  --allowedTools mcp__goalsui__*``; MCP tools reach the model as ``mcp__goalsui__NAME``).
- Codex: ``codex_home`` writes ``CODEX_HOME/config.toml`` naming the server as the model
  provider (``wire_api = "responses"``); ``codex_env`` and ``codex_argv`` (``exec --json
  --skip-git-repo-check``, the goalsui server by ``-c mcp_servers.goalsui.*``, and the
  switches that take Codex's own tools away: ``CODEX_LEAN``). Codex shows MCP tools to
  the model as a namespace ``mcp__goalsui`` holding the bare tool names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CLAUDE_CODE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"
PACKAGES = (f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}", f"@openai/codex@{CODEX_VERSION}")
INSTALL_TIMEOUT = 900  # seconds; Codex brings a ~300 MB binary

# Codex's own tools, taken away (measured with 0.171.0): web_search, the multi_agent_v1
# namespace (sub-agents), view_image, get_goal/create_goal/update_goal, and the shell
# (exec_command, write_stdin). Left whatever is set: request_user_input (refused in exec
# mode) and, while any MCP server is configured, list_mcp_resources,
# list_mcp_resource_templates and read_mcp_resource. --ignore-user-config drops the MCP
# servers (and everything else) of the user's config.toml; auth still comes from CODEX_HOME.
CODEX_LEAN = (
    "-c",
    'web_search="disabled"',
    "--disable",
    "multi_agent",
    "--disable",
    "view_image",
    "--disable",
    "goals",
)
CODEX_NO_SHELL = ("--disable", "shell_tool")

CODEX_PROVIDER = "scripted"
CODEX_KEY_ENV = "SCRIPTED_API_KEY"


@dataclass(frozen=True)
class AgentClis:
    claude: Path
    codex: Path
    prefix: Path  # the npm prefix they are installed in


_reason = ""


def cache_dir() -> Path:
    root = os.environ.get("GOALSUI_AGENT_CLI_CACHE")
    if root:
        return Path(root)
    return (
        Path.home()
        / ".cache"
        / "goalsui-tests"
        / "agent-clis"
        / f"claude-code-{CLAUDE_CODE_VERSION}_codex-{CODEX_VERSION}"
    )


def _binaries(prefix: Path) -> AgentClis:
    bin_dir = prefix / "node_modules" / ".bin"
    return AgentClis(claude=bin_dir / "claude", codex=bin_dir / "codex", prefix=prefix)


def _stamp(prefix: Path) -> Path:
    return prefix / "goalsui-installed.json"


def _installed(prefix: Path) -> AgentClis | None:
    """The binaries, when the stamp says this exact pair is installed and both are there."""
    try:
        stamp = json.loads(_stamp(prefix).read_text())
    except (OSError, ValueError):
        return None
    clis = _binaries(prefix)
    if stamp.get("packages") != list(PACKAGES):
        return None
    if not (os.access(clis.claude, os.X_OK) and os.access(clis.codex, os.X_OK)):
        return None
    return clis


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def agent_clis_or_reason() -> tuple[AgentClis | None, str]:
    """Install (once) and return the two CLIs, or None and why not."""
    prefix = cache_dir()
    clis = _installed(prefix)
    if clis is not None:
        return clis, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed: cannot install the agent CLIs " + " ".join(PACKAGES)
    try:
        with _locked(prefix.parent / f".{prefix.name}.lock"):
            clis = _installed(prefix)  # another worker may have finished meanwhile
            if clis is not None:
                return clis, ""
            prefix.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *PACKAGES],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                return None, f"npm install {' '.join(PACKAGES)} failed: {' | '.join(tail)}"
            clis = _binaries(prefix)
            for binary in (clis.claude, clis.codex):
                if not os.access(binary, os.X_OK):
                    return None, f"npm install left no {binary}"
            record = {"packages": list(PACKAGES), "seconds": round(time.monotonic() - started, 1)}
            _stamp(prefix).write_text(json.dumps(record) + "\n")
            return clis, ""
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot install the agent CLIs {' '.join(PACKAGES)}: {exc}"


def ensure_agent_clis() -> AgentClis | None:
    """The two CLIs, installed if needed; None when they can't be (see ``unavailable_reason``)."""
    global _reason
    clis, _reason = agent_clis_or_reason()
    return clis


def unavailable_reason() -> str:
    """Why the last ``ensure_agent_clis()`` returned None ("" when it did not)."""
    return _reason


# -- pointing each CLI at a scripted model server ------------------------------------------------
def _base_env(base: Mapping[str, str] | None, drop: Sequence[str]) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for key in list(env):
        if key.startswith(tuple(drop)) or key.startswith("GOALSUI_"):
            del env[key]
    return env


def claude_env(
    server_url: str,
    home: Path,
    *,
    base: Mapping[str, str] | None = None,
    wait_for_mcp: bool = True,
) -> dict[str, str]:
    """Claude Code's environment: the model server, a dummy key, a scratch HOME.

    ``wait_for_mcp`` (default) makes ``-p`` wait for the MCP servers to connect (up to
    30 s) before the first model request; without it a stdio server slower than about
    2 s (a cold ``goalsui mcp`` on a busy machine) is missing from that request.
    """
    home.mkdir(parents=True, exist_ok=True)
    env = _base_env(base, ("ANTHROPIC_", "CLAUDE_", "MCP_"))
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=server_url,
        ANTHROPIC_API_KEY="dummy",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    if wait_for_mcp:
        env.update(MCP_CONNECTION_NONBLOCKING="0", MCP_CONNECT_TIMEOUT_MS="30000")
    return env


def claude_argv(
    clis: AgentClis,
    mcp_config: Path,
    *,
    tools: str = "",
    allowed: str = "mcp__goalsui__*",
    extra: Sequence[str] = (),
) -> list[str]:
    """``claude -p`` with only the servers of ``mcp_config``; the prompt goes on stdin.
    ``--allowedTools`` must name every tool the model may use (in -p mode anything else
    ends in ``permission_denials``); built-in editing tools need naming there too."""
    return [
        str(clis.claude),
        "-p",
        "--output-format",
        "json",
        "--mcp-config",
        str(mcp_config),
        "--strict-mcp-config",
        "--tools",
        tools,
        "--allowedTools",
        allowed,
        *extra,
    ]


def mcp_config_file(path: Path, name: str, argv: Sequence[str], env: Mapping[str, str]) -> Path:
    """A ``{"mcpServers": {NAME: {command, args, env}}}`` file for a stdio server."""
    entry = {"command": argv[0], "args": list(argv[1:]), "env": dict(env), "alwaysLoad": True}
    path.write_text(json.dumps({"mcpServers": {name: entry}}, indent=1))
    return path


def codex_home(server_url: str, home: Path) -> Path:
    """A CODEX_HOME whose config.toml names the model server as the model provider."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{CODEX_PROVIDER}"\n'
        f'model_provider = "{CODEX_PROVIDER}"\n'
        f"[model_providers.{CODEX_PROVIDER}]\n"
        f'name = "{CODEX_PROVIDER}"\n'
        f'base_url = "{server_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{CODEX_KEY_ENV}"\n'
    )
    return home


def codex_env(
    server_url: str, home: Path, *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Codex's environment: CODEX_HOME (config.toml written here) and the dummy key."""
    env = _base_env(base, ("OPENAI_", "CODEX_"))
    env.update(CODEX_HOME=str(codex_home(server_url, home)), **{CODEX_KEY_ENV: "dummy"})
    return env


def _toml(value: object) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)  # a TOML basic string is a JSON string


def codex_mcp_stdio(name: str, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``-c`` overrides for a required stdio MCP server whose tools need no approval."""
    key = f"mcp_servers.{name}"
    return [
        "-c",
        f"{key}.command={_toml(argv[0])}",
        "-c",
        f"{key}.args={_toml(list(argv[1:]))}",
        "-c",
        f"{key}.env={_toml(dict(env))}",
        "-c",
        f"{key}.required=true",
        "-c",
        f'{key}.default_tools_approval_mode="approve"',
    ]


def codex_mcp_http(name: str, url: str, token_env: str | None = None) -> list[str]:
    """``-c`` overrides for a required streamable-HTTP MCP server (bearer token by env)."""
    key = f"mcp_servers.{name}"
    argv = ["-c", f"{key}.url={_toml(url)}"]
    if token_env:
        argv += ["-c", f"{key}.bearer_token_env_var={_toml(token_env)}"]
    return [
        *argv,
        "-c",
        f"{key}.required=true",
        "-c",
        f'{key}.default_tools_approval_mode="approve"',
    ]


def codex_argv(clis: AgentClis, *overrides: str, lean: bool = True) -> list[str]:
    """``codex exec --json --skip-git-repo-check`` reading the prompt from stdin."""
    return [
        str(clis.codex),
        "exec",
        "--json",
        "--skip-git-repo-check",
        *(CODEX_LEAN if lean else ()),
        *overrides,
        "-",
    ]


def codex_final_message(stdout: str) -> str | None:
    """The text of the last ``agent_message`` in ``codex exec --json`` output."""
    text = None
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            item = event.get("item") or {}
            if event.get("type") == "item.completed" and item.get("type") == "agent_message":
                text = item.get("text")
    return text


def main() -> int:
    """``python tests/agent_clis.py``: install (once) and say where, or why not (exit 1)."""
    clis, reason = agent_clis_or_reason()
    if clis is None:
        print(reason)
        return 1
    print(f"claude-code {CLAUDE_CODE_VERSION}, codex {CODEX_VERSION} in {clis.prefix}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
