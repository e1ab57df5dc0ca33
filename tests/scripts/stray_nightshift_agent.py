#!/usr/bin/env python3
"""A stand-in nightshift agent that commits where it should not (no model, real git).

As the commander it does nothing. As a task worker (cwd = its worktree) it commits its
task on its own branch, and then, for a task containing ONBASE, also commits on the base
branch in the repository's main work tree (as this task: goalsui's committer identity);
for one containing HUMAN, it commits there as a person would (its own committer). A task
containing CHECK writes the file named by STRAY_CHECK_MARK when the check runs (the check
is this script with --check).
"""

import os
import subprocess
import sys
from pathlib import Path


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    base = ["git", "-c", "user.name=Night Agent", "-c", "user.email=night@example.invalid"]
    return subprocess.run(
        [*base, *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout


def main() -> int:
    if "--check" in sys.argv:
        Path(sys.argv[sys.argv.index("--check") + 1]).write_text("operator's check ran\n")
        return 0
    prompt = sys.stdin.read()
    if os.environ.get("GOALSUI_WORKER") == "commander":
        print("NOTHING_TO_REPORT")
        return 0
    task = prompt.partition("## Tonight's task\n\n")[2].split("\n", 1)[0].strip()
    here = Path.cwd()
    (here / "TASK.md").write_text(f"{task}\n")
    git(here, "add", "TASK.md")
    git(here, "commit", "-q", "-m", f"task: {task}")
    common = Path(git(here, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    main_tree = common.parent
    if "ONBASE" in task or "HUMAN" in task:
        env = dict(os.environ)
        if "HUMAN" in task:
            env["GIT_COMMITTER_EMAIL"] = "human@example.invalid"
            env["GIT_COMMITTER_NAME"] = "A Person"
        (main_tree / "STRAY.md").write_text(f"left on the base by: {task}\n")
        git(main_tree, "add", "STRAY.md", env=env)
        git(main_tree, "commit", "-q", "-m", f"stray: {task}", env=env)
    print(f"did: {task}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
