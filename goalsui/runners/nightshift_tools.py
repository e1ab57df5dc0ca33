"""What a nightshift agent may touch: its worktree (task) or the repository read-only (commander);
git transports are off for every role (docs/nightshift.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from goalsui.runners.presets import CODEX_SHELL

TASK = "task"
COMMANDER = "commander"
ROLES = (TASK, COMMANDER)

#: Claude Code's own tools a task may use (files in its worktree and a shell)
CLAUDE_TASK_TOOLS = ("Read", "Edit", "Write", "Glob", "Grep", "Bash")
#: what the commander may use on the repository: reading only
CLAUDE_COMMANDER_TOOLS = ("Read", "Glob", "Grep")
#: permission rules no nightshift agent gets, whatever else it is allowed
CLAUDE_DENIED = ("Bash(git push:*)", "Bash(git remote:*)", "Bash(git fetch:*)")


@dataclass(frozen=True)
class AgentOptions:
    """How one nightshift agent runs: its CLI's own tools, flags, folder and environment."""

    tools: tuple[str, ...]
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)


#: git configuration by environment: no transport at all for the agent's git calls
NO_PUSH_ENV = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.allow",
    "GIT_CONFIG_VALUE_0": "never",
    "GIT_TERMINAL_PROMPT": "0",
}


def nightshift_agent_options(agent: str, role: str, workdir: Path) -> AgentOptions:
    """``agent``'s options in ``role`` with ``workdir``; others get the folder and no-push env."""
    if role not in ROLES:
        raise ValueError(f"unknown nightshift role {role!r} (known: {', '.join(ROLES)})")
    env = NO_PUSH_ENV
    if agent == "claude":
        denied = ("--disallowedTools", ",".join(CLAUDE_DENIED))
        if role == TASK:
            flags = ("--add-dir", str(workdir), "--permission-mode", "acceptEdits", *denied)
            return AgentOptions(CLAUDE_TASK_TOOLS, flags, workdir, env)
        return AgentOptions(
            CLAUDE_COMMANDER_TOOLS, ("--add-dir", str(workdir), *denied), workdir, env
        )
    if agent == "codex":
        # Codex reads and edits through its shell: the sandbox decides what it may touch
        sandbox = "workspace-write" if role == TASK else "read-only"
        sandboxed = ("-C", str(workdir), "--sandbox", sandbox)
        return AgentOptions((CODEX_SHELL,), sandboxed, workdir, env)
    return AgentOptions((), (), workdir, env)


def _extend_list_flag(argv: list[str], flag: str, values: Sequence[str]) -> bool:
    """Add ``values`` to the comma list after ``flag``; False when ``flag`` is absent."""
    if flag not in argv:
        return False
    index = argv.index(flag) + 1
    if index >= len(argv):
        return False
    present = [v for v in argv[index].split(",") if v]
    argv[index] = ",".join([*present, *(v for v in values if v not in present)])
    return True


def _without_pair(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` without the pair ``flag value`` wherever it occurs."""
    starts = [i for i in range(len(argv) - 1) if argv[i] == flag and argv[i + 1] == value]
    dropped = {*starts, *(i + 1 for i in starts)}
    return [arg for i, arg in enumerate(argv) if i not in dropped]


def apply_agent_options(argv: Sequence[str], agent: str, options: AgentOptions) -> list[str]:
    """``argv`` (a preset's) with ``options`` folded in."""
    out = list(argv)
    if agent == "claude" and options.tools:
        if not _extend_list_flag(out, "--tools", options.tools):
            out += ["--tools", ",".join(options.tools)]
        if not _extend_list_flag(out, "--allowedTools", options.tools):
            out += ["--allowedTools", ",".join(options.tools)]
    if agent == "codex" and CODEX_SHELL in options.tools:
        out = _without_pair(out, "--disable", "shell_tool")
    if agent == "codex" and out and out[-1] == "-":
        return [*out[:-1], *options.argv, "-"]
    return [*out, *options.argv]
