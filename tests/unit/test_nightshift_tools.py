"""What a nightshift agent may touch, per preset and role (goalsui/runners/nightshift_tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goalsui.runners.nightshift_tools import (
    apply_agent_options,
    nightshift_agent_options,
)

WT = Path("/state/worktrees/g/run-7-fix")
REPO = Path("/src/project")
CLAUDE = [
    "claude",
    "-p",
    "--output-format",
    "json",
    "--mcp-config",
    "/c.json",
    "--strict-mcp-config",
    "--tools",
    "",
    "--allowedTools",
    "mcp__goalsui__*",
]
CODEX = ["codex", "exec", "--json", "--skip-git-repo-check", "-c", "x=1"]
CODEX += ["--disable", "goals", "--disable", "shell_tool", "-"]


def test_a_claude_task_edits_and_runs_commands_in_its_worktree_only() -> None:
    options = nightshift_agent_options("claude", "task", WT)
    argv = apply_agent_options(CLAUDE, "claude", options)
    assert argv[argv.index("--tools") + 1] == "Read,Edit,Write,Glob,Grep,Bash"
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert allowed == ["mcp__goalsui__*", "Read", "Edit", "Write", "Glob", "Grep", "Bash"]
    assert argv.count("--tools") == 1 and argv.count("--allowedTools") == 1
    assert argv[argv.index("--add-dir") + 1] == str(WT) and argv.count("--add-dir") == 1
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "Bash(git push:*)" in argv[argv.index("--disallowedTools") + 1]
    assert options.cwd == WT
    assert options.env["GIT_CONFIG_KEY_0"] == "protocol.allow"
    assert options.env["GIT_CONFIG_VALUE_0"] == "never"


def test_a_claude_commander_reads_the_repository() -> None:
    options = nightshift_agent_options("claude", "commander", REPO)
    argv = apply_agent_options(CLAUDE, "claude", options)
    assert argv[argv.index("--tools") + 1] == "Read,Glob,Grep"
    assert "Edit" not in argv[argv.index("--allowedTools") + 1]
    assert argv[argv.index("--add-dir") + 1] == str(REPO)
    assert "--permission-mode" not in argv


@pytest.mark.parametrize(
    ("role", "workdir", "sandbox"),
    [("task", WT, "workspace-write"), ("commander", REPO, "read-only")],
)
def test_codex_runs_in_its_folder_under_its_sandbox(role: str, workdir: Path, sandbox: str) -> None:
    argv = apply_agent_options(CODEX, "codex", nightshift_agent_options("codex", role, workdir))
    assert argv[-1] == "-"  # the prompt from stdin stays last
    assert argv[argv.index("-C") + 1] == str(workdir)
    assert argv[argv.index("--sandbox") + 1] == sandbox
    disabled = [argv[i + 1] for i, a in enumerate(argv) if a == "--disable"]
    assert disabled == ["goals"]  # its shell is how Codex reads and edits: the sandbox bounds it


def test_another_runner_gets_only_its_folder_and_no_transport() -> None:
    options = nightshift_agent_options("my-agent", "task", WT)
    assert options.tools == () and options.argv == () and options.cwd == WT
    assert apply_agent_options(["x", "y"], "my-agent", options) == ["x", "y"]
    with pytest.raises(ValueError, match="role"):
        nightshift_agent_options("claude", "pilot", WT)
