"""A nightshift the operator can trust: replay touches nothing else, commits left outside a
task's branch are moved away, approvals merge exactly what was reviewed and only branches
goalsui made, and ``nightshift.yaml`` (which chooses a repository and a program) is the
operator's. Each test reproduces what went wrong before.

Real parts: git repositories in temporary folders, a real KB and SQLite file, ``goalsui``
run as a subprocess, the real scheduler on a fast clock, stand-in agents that make real
commits (tests/scripts/).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.service.bindings import recorded_binding
from tests.base_kit import run_cli
from tests.e2e.test_nightshift_repo import run
from tests.git_kit import git, make_repo

TESTS = Path(__file__).resolve().parent.parent
STANDIN = TESTS / "scripts" / "standin_nightshift_agent.py"
STRAY = TESTS / "scripts" / "stray_nightshift_agent.py"
NIGHT = "2026-12-01"


def make_night(tmp_path: Path, agent: Path, check: str) -> dict:
    repo = make_repo(tmp_path / "repo")
    env = {
        **os.environ,
        "GOALSUI_KB": str(tmp_path / "kb"),
        "GOALSUI_STATE_DIR": str(tmp_path / "state"),
    }
    env.pop("GOALSUI_DB", None)
    run(env, "init", str(tmp_path / "kb"))
    command = f"{sys.executable} {agent}"
    if agent == STANDIN:
        command += " --mcp-config {mcp_stdio_config}"
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
        command,
        "--check",
        check,
        "--json",
    )
    goal_id = json.loads(out.stdout)["goal_id"]
    return {
        "repo": repo,
        "env": env,
        "goal": goal_id,
        "dir": tmp_path / "kb" / goal_id,
        "base": git(repo, "rev-parse", "main").strip(),
        "tmp": tmp_path,
    }


def service_of(n: dict) -> Service:
    return Service.open(n["tmp"] / "kb", None, n["tmp"] / "state", sync=False)


@pytest.fixture
def stray_night(tmp_path: Path) -> dict:
    mark = tmp_path / "check-ran"
    n = make_night(tmp_path, STRAY, f"{sys.executable} {STRAY} --check {mark}")
    n["mark"] = mark
    return n


def plan(n: dict, worker: str, task: str) -> None:
    run(n["env"], "nightshift", "plan", "add", worker, task, "--night", NIGHT)


# --- 28.1: the replay touches only the replayed goal ---------------------------------------


def test_a_replay_leaves_other_goals_and_the_coming_night_as_they_were(stray_night: dict) -> None:
    n = stray_night
    run(
        n["env"],
        "goal",
        "create",
        "Pulse",
        "--task",
        "tick every minute",
        "--worker",
        "tick",
        "--every",
        "1m",
        "--command",
        f"{sys.executable} -c pass",
    )
    service = service_of(n)
    try:
        service.index.sync()
        before = {
            i.id: (i.goal_id, i.worker, i.next_run_at, i.fires) for i in service.intents.list()
        }
        assert any(goal != n["goal"] for goal, *_ in before.values())
    finally:
        service.close()
    plan(n, "worker-1", "Tidy the README")
    out = run(n["env"], "nightshift", "replay", "--json")  # tonight: most of it still ahead
    replayed = json.loads(out.stdout)
    assert {"commander", "worker-1", "worker-2", "reporter"} <= {w for w, _ in replayed["runs"]}
    service = service_of(n)
    try:
        after = {
            i.id: (i.goal_id, i.worker, i.next_run_at, i.fires) for i in service.intents.list()
        }
        # the other goal's every-minute worker: not claimed, not moved, never run; the
        # nightshift's own intents keep tonight's slots and tomorrow's report
        assert after == before
        assert service.runs.list(limit=100) == []  # nothing recorded in the operator's db
        now = datetime.now(UTC)
        assert all(r.started_at <= now for r in service.runs.list(limit=100))
        slots = [nxt for goal, _, nxt, _ in after.values() if goal == n["goal"]]
        assert slots and all(s is not None and s > now for s in slots)
    finally:
        service.close()
    records = Path(replayed["records"])
    assert (records / "goalsui.db").is_file()  # the replay's own runs, kept to read


# --- 28.2 / 26.5: a commit left outside the task's branch ----------------------------------


def test_a_commit_a_task_left_on_the_base_is_moved_to_a_review_branch(stray_night: dict) -> None:
    n = stray_night
    plan(n, "worker-1", "Fix the typo ONBASE")
    run(n["env"], "nightshift", "replay", "--night", NIGHT)
    repo = n["repo"]
    assert git(repo, "rev-parse", "main").strip() == n["base"]  # the base is restored
    assert not (repo / "STRAY.md").exists()  # and its work tree with it
    assert git(repo, "status", "--porcelain").strip() == ""
    review = f"nightshift/{NIGHT}/review-worker-1-main"
    assert git(repo, "log", "-1", "--format=%s", review).strip() == "stray: Fix the typo ONBASE"
    (item,) = json.loads(run(n["env"], "nightshift", "plan", "--json").stdout)
    assert item["status"] == "done" and review in item["stray"]
    views = {
        v["branch"]: v for v in json.loads(run(n["env"], "nightshift", "branches", "--json").stdout)
    }
    assert views[review]["made_by_goalsui"]  # it can be approved or rejected like the others
    report = (n["dir"] / "reports" / f"{NIGHT}.md").read_text()
    assert review in report
    assert "Nothing to act on" not in report


def test_a_commit_someone_else_put_on_the_base_is_only_flagged(stray_night: dict) -> None:
    n = stray_night
    plan(n, "worker-1", "Fix the typo HUMAN")
    run(n["env"], "nightshift", "replay", "--night", NIGHT)
    repo = n["repo"]
    moved = git(repo, "rev-parse", "main").strip()
    assert moved != n["base"]  # not the task's commit: left where it is
    assert git(repo, "log", "-1", "--format=%ce", "main").strip() == "human@example.invalid"
    assert "review-" not in git(repo, "branch", "--list", "nightshift/*")
    (item,) = json.loads(run(n["env"], "nightshift", "plan", "--json").stdout)
    assert item["status"] == "failed" and "not by this task" in item["stray"]


# --- 29: approve merges exactly what was reviewed, only branches goalsui made -------------


def test_approve_refuses_a_branch_that_moved_since_the_review_and_merges_the_named_commit(
    stray_night: dict,
) -> None:
    n = stray_night
    plan(n, "worker-1", "Fix the typo")
    run(n["env"], "nightshift", "replay", "--night", NIGHT)
    repo = n["repo"]
    (view,) = json.loads(run(n["env"], "nightshift", "branches", "--json").stdout)
    branch, reviewed = view["branch"], view["reviewed"]
    assert reviewed == git(repo, "rev-parse", branch).strip()
    # a commit added after the review (by an agent, a hook, anyone)
    git(repo, "checkout", "-q", branch)
    (repo / "LATE.md").write_text("added after the review\n")
    git(repo, "add", "LATE.md")
    git(repo, "commit", "-q", "-m", "late")
    git(repo, "checkout", "-q", "main")
    late = git(repo, "rev-parse", branch).strip()
    proc = run(n["env"], "nightshift", "approve", branch, check=False)
    assert proc.returncode == 1
    assert reviewed[:12] in proc.stderr and late[:12] in proc.stderr
    assert git(repo, "rev-parse", "main").strip() == n["base"]  # nothing merged
    run(n["env"], "nightshift", "approve", branch, "--sha", late[:12])
    assert (repo / "LATE.md").exists()


def test_approve_and_reject_refuse_a_nightshift_branch_goalsui_never_made(
    stray_night: dict,
) -> None:
    n = stray_night
    repo = n["repo"]
    forged = f"nightshift/{NIGHT}/worker-1-forged"
    git(repo, "checkout", "-q", "-b", forged)
    (repo / "EVIL.md").write_text("x\n")
    git(repo, "add", "EVIL.md")
    git(repo, "commit", "-q", "-m", "evil")
    git(repo, "checkout", "-q", "main")
    for action in ("approve", "reject"):
        proc = run(n["env"], "nightshift", action, forged, check=False)
        assert proc.returncode == 1 and "goalsui did not make" in proc.stderr
    assert git(repo, "rev-parse", "main").strip() == n["base"]
    assert forged in git(repo, "branch", "--list", "nightshift/*")
    listed = json.loads(run(n["env"], "nightshift", "branches", "--json").stdout)
    assert [v["made_by_goalsui"] for v in listed] == [False]


# --- 29: nightshift.yaml chooses a repository and a program: the operator's ----------------


def test_an_agent_cannot_write_nightshift_yaml_but_the_operator_can(stray_night: dict) -> None:
    n = stray_night
    service = service_of(n)
    try:
        with pytest.raises(Exception, match="not written by agents"):
            service.files.write(
                n["goal"],
                "nightshift.yaml",
                f"repo: {n['repo']}\ncheck: [touch, /tmp/x]\n",
                definitions=False,
            )
    finally:
        service.close()
    text = (n["dir"] / "nightshift.yaml").read_text()
    proc = run_cli("kb", "write", n["goal"], "nightshift.yaml", env=n["env"], input=text)
    assert proc.returncode == 0, proc.stderr


def test_a_check_changed_in_the_file_is_not_run_and_doctor_says_so(stray_night: dict) -> None:
    n = stray_night
    evil = n["tmp"] / "evil-ran"
    path = n["dir"] / "nightshift.yaml"
    text = path.read_text()
    argv = [sys.executable, "-c", f"open({str(evil)!r}, 'w').write('x')"]
    path.write_text(text.split("check:")[0] + f"check: {json.dumps(argv)}\n")
    proc = run(n["env"], "doctor", check=False)
    assert proc.returncode == 1 and "changed since the operator set it" in proc.stdout + proc.stderr
    plan(n, "worker-1", "Fix the typo")
    run(n["env"], "nightshift", "replay", "--night", NIGHT)
    assert not evil.exists()  # the program written into the file never ran
    assert n["mark"].exists()  # the operator's check did
    # the operator accepts the file: from then on it is what runs
    run(n["env"], "nightshift", "trust")
    assert run(n["env"], "doctor", check=False).returncode == 0


def test_a_bad_repo_written_into_the_file_disables_nothing(
    stray_night: dict, tmp_path: Path
) -> None:
    n = stray_night
    path = n["dir"] / "nightshift.yaml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path.write_text(path.read_text().replace(f"repo: {n['repo']}", f"repo: {elsewhere}"))
    proc = run(n["env"], "doctor", check=False)
    assert proc.returncode == 1
    assert "changed since the operator set it" in proc.stdout + proc.stderr
    plan(n, "worker-1", "Fix the typo")
    out = run(n["env"], "nightshift", "replay", "--night", NIGHT)
    assert "worker-1: ok" in out.stdout  # still works on the operator's repository
    assert f"nightshift/{NIGHT}/worker-1-fix-the-typo" in git(
        n["repo"], "branch", "--list", "nightshift/*"
    )


def test_check_argv_is_the_operators_shell_words(stray_night: dict) -> None:
    service = service_of(stray_night)
    try:
        binding = recorded_binding(service, stray_night["goal"])
    finally:
        service.close()
    assert binding is not None and binding.check is not None
    assert shlex.join(binding.check).endswith(str(stray_night["mark"]))
