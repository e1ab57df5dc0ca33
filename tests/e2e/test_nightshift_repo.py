"""The nightshift on a real git repository: plan, replay, branches, report, approve, reject.

Real parts only: a temporary git repository with a bare "remote" (to prove nothing is
pushed or fetched), a real KB and SQLite file, ``goalsui`` run as a subprocess, the real
scheduler on a fast clock (``nightshift replay``), and a stand-in agent that makes real
commits (tests/scripts/standin_nightshift_agent.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.base_kit import cli_argv, run_cli
from tests.git_kit import git, make_repo

TESTS = Path(__file__).resolve().parent.parent
AGENT = TESTS / "scripts" / "standin_nightshift_agent.py"
NIGHT = "2026-12-01"


def run(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = run_cli(*args, env=env, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"goalsui {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture
def night(tmp_path: Path) -> dict:
    """A repository on branch main with a bare remote, a KB, and a nightshift goal."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = make_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    env = {
        **os.environ,
        "GOALSUI_KB": str(tmp_path / "kb"),
        "GOALSUI_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("GOALSUI_DB", None)
    run(env, "init", str(tmp_path / "kb"))
    out = run(
        env,
        "nightshift",
        "init",
        str(repo),
        "--tz",
        "Europe/Berlin",
        "--workers",
        "2",
        "--command",
        f"{sys.executable} {AGENT} --mcp-config {{mcp_config}}",
        "--check",
        f"{sys.executable} -c pass",
        "--json",
    )
    goal_id = json.loads(out.stdout)["goal_id"]
    goal_dir = tmp_path / "kb" / goal_id
    return {
        "repo": repo,
        "remote": remote,
        "env": env,
        "goal": goal_id,
        "dir": goal_dir,
        "base": git(repo, "rev-parse", "main").strip(),
        "tmp": tmp_path,
    }


def backlog(n: dict, *lines: str) -> None:
    (n["dir"] / "backlog.md").write_text("".join(f"- {line}\n" for line in lines))


def test_init_lays_out_the_night_and_refuses_a_folder_that_is_not_a_work_tree(
    night: dict, tmp_path: Path
) -> None:
    workers = sorted(p.name for p in (night["dir"] / "workers").iterdir())
    assert workers == ["commander", "reporter", "worker-1", "worker-2"]
    commander = (night["dir"] / "workers" / "commander" / "definition.yaml").read_text()
    assert '"0 20 * * *"' in commander or "0 20 * * *" in commander
    assert "Europe/Berlin" in commander
    assert "nightshift/YYYY-MM-DD" in (night["dir"] / "protocol.md").read_text()
    run(night["env"], "doctor")
    plain_dir = tmp_path / "not-a-repo"
    plain_dir.mkdir()
    proc = run(night["env"], "nightshift", "init", str(plain_dir), check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "not the top of a git work tree" in proc.stderr
    listed = json.loads(run(night["env"], "goal", "list", "--json").stdout)
    assert len(listed) == 1  # the refused init left nothing behind


def test_a_replayed_night_leaves_one_branch_per_task_and_a_report(night: dict) -> None:
    backlog(night, "worker-1: Fix the typo in README", "worker-2: Document the setup")
    out = run(night["env"], "nightshift", "replay", "--night", NIGHT)
    statuses = [line.split(": ")[1] for line in out.stdout.splitlines() if ": " in line]
    assert statuses == ["ok", "ok", "ok", "ok"], out.stdout
    report = Path(out.stdout.splitlines()[-1])
    # the report is named by the night's start, like the branches
    assert report.name == f"{NIGHT}.md" and report.is_file()
    repo = night["repo"]
    branches = git(repo, "branch", "--list", "nightshift/*", "--format=%(refname:short)").split()
    assert branches == [
        f"nightshift/{NIGHT}/worker-1-fix-the-typo-in-readme",
        f"nightshift/{NIGHT}/worker-2-document-the-setup",
    ]
    assert git(repo, "rev-parse", "main").strip() == night["base"]  # base untouched
    for branch in branches:
        assert git(repo, "rev-list", "--count", f"main..{branch}").strip() == "1"
    assert git(repo, "worktree", "list").count("\n") == 1  # every task worktree removed
    # nothing reached the remote
    assert git(night["remote"], "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main"
    ]
    text = report.read_text()
    assert text.startswith("# Nightshift ") and f" report, night of {NIGHT}\n" in text
    assert f"night of {NIGHT}." in text  # the Branches section names the same night
    for branch in branches:
        assert branch in text
    assert "NIGHTSHIFT.md | 1 +" in text
    assert "passed" in text  # the check ran in each worktree
    plan = json.loads(run(night["env"], "nightshift", "plan", "--json").stdout)
    assert [(i["worker"], i["status"], i["commits"]) for i in plan] == [
        ("worker-1", "done", 1),
        ("worker-2", "done", 1),
    ]


def test_the_commander_twice_in_one_night_plans_each_task_once(night: dict) -> None:
    backlog(night, "worker-1: Fix the typo in README")
    run(night["env"], "nightshift", "replay", "--night", NIGHT)
    out = run(night["env"], "nightshift", "replay", "--night", NIGHT)
    plan = json.loads(run(night["env"], "nightshift", "plan", "--json").stdout)
    assert len(plan) == 1 and plan[0]["status"] == "done"
    # the second night's worker had nothing left to do: skipped, no second branch
    assert "worker-1: skipped" in out.stdout
    assert len(git(night["repo"], "branch", "--list", "nightshift/*").split()) == 1


def test_a_failing_task_keeps_its_branch_and_is_reported_failed(night: dict) -> None:
    backlog(night, "worker-1: Break things FAIL", "worker-2: NOTHING to change")
    out = run(night["env"], "nightshift", "replay", "--night", NIGHT)
    assert "worker-1: failed" in out.stdout
    plan = {
        i["worker"]: i for i in json.loads(run(night["env"], "nightshift", "plan", "--json").stdout)
    }
    assert plan["worker-1"]["status"] == "failed"
    assert plan["worker-2"]["status"] == "no-commits"
    branch = plan["worker-1"]["branch"]
    assert git(night["repo"], "rev-list", "--count", f"main..{branch}").strip() == "1"
    assert git(night["repo"], "rev-parse", "main").strip() == night["base"]
    report = (night["dir"] / "reports" / f"{NIGHT}.md").read_text()
    assert "failed" in report and branch in report


def test_approve_merges_and_reject_deletes_both_journaled(night: dict) -> None:
    backlog(night, "worker-1: Fix the typo in README", "worker-2: Document the setup")
    run(night["env"], "nightshift", "replay", "--night", NIGHT)
    views = json.loads(run(night["env"], "nightshift", "branches", "--json").stdout)
    assert [v["commits"] for v in views] == [1, 1]
    keep, drop = sorted(v["branch"] for v in views)
    run(night["env"], "nightshift", "approve", keep)
    repo = night["repo"]
    parents = git(repo, "rev-list", "--parents", "-n", "1", "main").split()
    assert len(parents) == 3  # a merge commit: itself and two parents
    assert "Fix the typo in README" in (repo / "NIGHTSHIFT.md").read_text()
    run(night["env"], "nightshift", "reject", drop)
    assert git(repo, "branch", "--list", "nightshift/*").strip() == ""
    plan = {
        i["branch"]: i["status"]
        for i in json.loads(run(night["env"], "nightshift", "plan", "--json").stdout)
    }
    assert plan == {keep: "approved", drop: "rejected"}
    proc = run(night["env"], "nightshift", "approve", drop, check=False)
    assert proc.returncode == 1 and "no branch" in proc.stderr
    proc = run(night["env"], "nightshift", "reject", "main", check=False)
    assert proc.returncode == 1 and "not a nightshift branch" in proc.stderr
    assert git(repo, "rev-parse", "--verify", "main")


def test_approve_refuses_a_conflict_and_changes_nothing(night: dict) -> None:
    backlog(night, "worker-1: Fix the typo in README")
    run(night["env"], "nightshift", "replay", "--night", NIGHT)
    repo = night["repo"]
    (repo / "NIGHTSHIFT.md").write_text("- a human wrote this first\n")
    git(repo, "add", "NIGHTSHIFT.md")
    git(repo, "commit", "-q", "-m", "human change")
    head = git(repo, "rev-parse", "main").strip()
    (branch,) = git(repo, "branch", "--list", "nightshift/*", "--format=%(refname:short)").split()
    proc = run(night["env"], "nightshift", "approve", branch, check=False)
    assert proc.returncode == 1 and "does not merge cleanly" in proc.stderr
    assert git(repo, "rev-parse", "main").strip() == head
    assert git(repo, "status", "--porcelain").strip() == ""
    assert branch in git(repo, "branch", "--list", "nightshift/*")


def test_a_broken_binding_is_a_doctor_problem_with_file_and_line(night: dict) -> None:
    path = night["dir"] / "nightshift.yaml"
    path.write_text(path.read_text() + "push: true\n")
    proc = run(night["env"], "doctor", check=False)
    assert proc.returncode == 1
    assert "nightshift.yaml" in proc.stdout + proc.stderr
    assert "unknown field 'push'" in proc.stdout + proc.stderr


def test_the_commander_plans_through_the_tool_server_and_only_it_can(night: dict) -> None:
    """``nightshift_plan_add`` is the commander's: idempotent per night, bad input refused."""
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session_tools(worker: str, calls: list[tuple[str, dict]]) -> tuple[set, list]:
        python, *argv = cli_argv("mcp", "--goal", night["goal"], "--worker", worker)
        params = StdioServerParameters(command=python, args=argv, env=night["env"])
        answers = []
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                for name, args in calls:
                    res = await s.call_tool(name, args)
                    text = "".join(getattr(c, "text", "") for c in res.content)
                    answers.append((res.is_error, res.structured_content, text))
        return names, answers

    add = {
        "worker": "worker-2",
        "task": "Tidy the changelog",
        "reason": "it is stale",
        "night": NIGHT,
    }
    names, answers = asyncio.run(
        session_tools(
            "commander",
            [
                ("nightshift_plan_add", add),
                ("nightshift_plan_add", add),
                ("nightshift_plan_add", {**add, "worker": "reporter"}),
                ("nightshift_plan_add", {**add, "night": "tonight"}),
                ("nightshift_plan", {"night": NIGHT}),
            ],
        )
    )
    assert {"nightshift_plan", "nightshift_plan_add"} <= names
    assert [a[1]["created"] for a in answers[:2]] == [True, False]
    for is_error, _, text in answers[2:4]:
        assert is_error and "\n" not in text.strip()
    assert "not a task worker" in answers[2][2] and "not a date" in answers[3][2]
    plan = answers[4][1]
    assert plan["workers"] == ["worker-1", "worker-2"]
    assert [(i["worker"], i["task"]) for i in plan["items"]] == [("worker-2", "Tidy the changelog")]
    state = (night["dir"] / "state.yaml").read_text()
    assert "it is stale" in state  # the reason is kept in decisions
    worker_names, _ = asyncio.run(session_tools("worker-1", []))
    assert not worker_names & {"nightshift_plan", "nightshift_plan_add"}
