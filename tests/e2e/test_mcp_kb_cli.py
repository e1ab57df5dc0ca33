"""``goalsui kb ls|cat|write GOAL PATH``: the agents' confined verbs on the command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.base_kit import clean_environ, run_cli
from tests.mcp_kit import tree

GOAL = "nightshift-979afc6e"


def kb_cli(service: Service, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_cli(
        "kb", *args, kb=service.kb.root, state=service.state_dir, env=clean_environ(), input=stdin
    )


def test_ls_cat_and_write_use_the_confined_tree(service: Service, tmp_path: Path) -> None:
    listed = kb_cli(service, "ls", GOAL, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {"definition.yaml", "workers", "log"} <= {e["name"] for e in json.loads(listed.stdout)}
    shown = kb_cli(service, "cat", GOAL, "protocol.md")
    assert shown.stdout == (service.kb.goal_dir(GOAL) / "protocol.md").read_text()
    wrote = kb_cli(service, "write", GOAL, "notes/plan.md", stdin="# tonight\n")
    assert wrote.returncode == 0 and "notes/plan.md" in wrote.stdout
    assert (service.kb.goal_dir(GOAL) / "notes" / "plan.md").read_text() == "# tonight\n"
    source = tmp_path / "state.yaml"
    source.write_text("plan: []\n")
    assert kb_cli(service, "write", GOAL, "state.yaml", f"@{source}").returncode == 0
    assert (service.kb.goal_dir(GOAL) / "state.yaml").read_text() == "plan: []\n"
    actions = [(j.action, j.subject) for j in service.journal.recent(10)]
    assert ("file written", f"{GOAL}/state.yaml") in actions


@pytest.mark.parametrize(
    "args,stdin,reason",
    [
        (("cat", GOAL, "../goalsui.yaml"), "", "leaves its folder"),
        (("cat", GOAL, "/etc/passwd"), "", "absolute path"),
        (("ls", GOAL, "../.."), "", "leaves its folder"),
        (("write", GOAL, "../escape.md"), "x", "leaves its folder"),
        (("write", GOAL, "log/2026-12-01.md"), "x", "append-only"),
        (("write", GOAL, "state.yaml"), "plan: [\n", "state.yaml"),
        (
            ("write", GOAL, "workers/scout/definition.yaml"),
            "schedule: {cron: '61 * * * *'}\n",
            "cron",
        ),
        (("write", GOAL, "notes.md", "notes.md"), "", "stdin (-) or @FILE"),
        (("cat", "no-such-goal", "x.md"), "", "no goal"),
        (("cat", GOAL, "nothing.md"), "", "no file"),
    ],
)
def test_bad_paths_and_content_are_one_line_errors(
    service: Service, args: tuple[str, ...], stdin: str, reason: str
) -> None:
    before = tree(service.kb.root)
    done = kb_cli(service, *args, stdin=stdin)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and reason in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert tree(service.kb.root) == before


def test_a_symlink_out_of_the_goal_is_refused(service: Service, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    (service.kb.goal_dir(GOAL) / "leak.txt").symlink_to(outside)
    assert kb_cli(service, "cat", GOAL, "leak.txt").returncode == 1
    done = kb_cli(service, "write", GOAL, "leak.txt", stdin="owned")
    assert done.returncode == 1 and "outside" in done.stderr
    assert outside.read_text() == "private"


@pytest.mark.parametrize(
    "args,reason",
    [
        (("runs", "show"), "needs a run id"),
        (("runs", "show", "abc"), "invalid run id"),
        (("runs", "show", "999"), "no run 999"),
        (("runs", "7"), "invalid choice"),
        (("mcp", "--run", "999"), "no run 999"),
        (("mcp", "--worker", "scout"), "--worker needs --goal"),
        (("mcp", "--goal", "no-such-goal"), "no goal"),
        (("mcp", "--run", "1", "--goal", GOAL), "takes its scope from the run"),
    ],
)
def test_runs_show_and_mcp_refuse_bad_input_in_one_line(
    service: Service, args: tuple[str, ...], reason: str
) -> None:
    done = run_cli(
        *args, kb=service.kb.root, state=service.state_dir, env=clean_environ(), input=""
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and reason in done.stderr, done.stderr
