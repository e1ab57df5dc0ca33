"""Git in tests: a command with a fixed identity, and a repository with one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` with a test identity; its stdout (raises on failure)."""
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def make_repo(path: Path) -> Path:
    """A repository at ``path`` with one commit (README.md) on ``main``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    return path
