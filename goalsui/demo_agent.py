"""The demo's stand-in for an agent CLI on the nightshift (real git, no model): it plans
``backlog.md`` lines, or commits a ``TODO.md`` on its branch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_TASK = re.compile(r"## Tonight's task\n\n(?P<task>.+)\n")
_BACKLOG = re.compile(r"^- (?P<worker>[a-z0-9-]+): (?P<task>.+)$", re.M)
_IDENTITY = ("-c", "user.name=goalsui demo agent", "-c", "user.email=demo-agent@goalsui.invalid")


def plan_from_backlog() -> str:
    backlog = Path("backlog.md")
    found = _BACKLOG.finditer(backlog.read_text(encoding="utf-8")) if backlog.is_file() else []
    planned = []
    for match in found:
        argv = [sys.executable, "-m", "goalsui", "nightshift", "plan", "add"]
        argv += [match["worker"], match["task"], "--reason", "first in backlog.md"]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        planned.append(f"{match['worker']}: {match['task']}")
    return "\n".join(planned) or "NOTHING_TO_REPORT"


def do_task(prompt: str) -> str:
    match = _TASK.search(prompt)
    if match is None:
        raise SystemExit("demo agent: no task in the prompt")
    task = match["task"].strip()
    notes = Path("TODO.md")
    before = notes.read_text(encoding="utf-8") if notes.exists() else "# To do\n\n"
    notes.write_text(before + f"- [x] {task}\n", encoding="utf-8")
    subprocess.run(["git", "add", "TODO.md"], check=True)
    subprocess.run(["git", *_IDENTITY, "commit", "-q", "-m", task], check=True)
    return f"Done: {task} (TODO.md updated, one commit)"


def main() -> int:
    prompt = sys.stdin.read()
    commander = os.environ.get("GOALSUI_WORKER") == "commander"
    print(plan_from_backlog() if commander else do_task(prompt))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
