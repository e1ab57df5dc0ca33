"""KB files on disk: atomic writes, the append-only log, comment-keeping edits, validation."""

from __future__ import annotations

import difflib
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.errors import GoalsuiError, KBError, ValidationError
from goalsui.kb.atomic import atomic_write
from goalsui.kb.layout import KB
from goalsui.kb.yamlio import load_yaml_mapping, parse_yaml
from goalsui.service import Service

GOAL = "nightshift-979afc6e"

HAND_WRITTEN = """\
# scout, as the on-call engineer left it on Friday.
# Keep the timeout short: the KB is small.
timeout: 1m    # raised from 30s on 2026-11-30
description: Takes an inventory of the whole KB (files, sizes, newest log line per goal) so later workers can compare.
runner:
    command: ["{python}", "workers/scout/tick.py"]   # read-only
schedule:
    # Berlin evening, after the commander.
    cron: "30 20 * * *"
    timezone: Europe/Berlin
capabilities:
- read_kb
# end of file
"""


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for folders)."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def temp_leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


# -- atomic writes ------------------------------------------------------------------------
def test_atomic_write_fsyncs_file_and_folder_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)  # the os module atomic_write calls
    target = tmp_path / "sub" / "state.yaml"
    atomic_write(target, "plan: []\n")
    atomic_write(target, "plan: [a]\n")
    assert target.read_text() == "plan: [a]\n"
    assert synced == ["file", "dir", "file", "dir"]
    assert temp_leftovers(tmp_path) == []


def test_atomic_write_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.yaml"
    atomic_write(target, "old\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert temp_leftovers(tmp_path) == []


def test_atomic_write_keeps_permission_bits(tmp_path: Path) -> None:
    script = tmp_path / "tick.py"
    script.write_text("print('hi')\n")
    script.chmod(0o755)
    atomic_write(script, "print('bye')\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    fresh = tmp_path / "new.md"
    atomic_write(fresh, "x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644


def test_kb_write_is_atomic_and_keeps_modes(service: Service, sample_kb: Path) -> None:
    script = sample_kb / GOAL / "workers" / "scout" / "tick.py"
    script.chmod(0o755)
    inode_before = script.stat().st_ino
    service.files.write(GOAL, "workers/scout/tick.py", "print('new')\n")
    assert script.read_text() == "print('new')\n"
    assert script.stat().st_ino != inode_before  # replaced, not rewritten in place
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert temp_leftovers(sample_kb) == []


# -- the append-only log ----------------------------------------------------------------------
def test_goal_log_only_grows(service: Service, sample_kb: Path, clock) -> None:
    day = clock.now.strftime("%Y-%m-%d")
    log = sample_kb / GOAL / "log" / f"{day}.md"
    path, line = service.files.append_log(GOAL, "first entry")
    assert path == log and line == 1
    first = log.read_bytes()
    inode = log.stat().st_ino
    clock.advance(60)
    path, line = service.files.append_log(GOAL, "second entry\nwith a detail line")
    assert line == 2
    data = log.read_bytes()
    assert data.startswith(first) and len(data) > len(first)
    assert log.stat().st_ino == inode  # appended in place, never replaced
    assert data.decode().splitlines() == [
        "- 12:00:00Z first entry",
        "- 12:01:00Z second entry",
        "  with a detail line",
    ]
    old = sample_kb / GOAL / "log" / "2026-11-30.md"
    before = old.read_bytes()
    service.files.append_log(GOAL, "today only")
    assert old.read_bytes() == before


def test_goal_log_is_not_writable_through_kb_write(service: Service, sample_kb: Path) -> None:
    log = sample_kb / GOAL / "log" / "2026-11-30.md"
    before = log.read_bytes()
    with pytest.raises(ValidationError, match="append-only"):
        service.files.write(GOAL, "log/2026-11-30.md", "rewritten history\n")
    assert log.read_bytes() == before


# -- update_worker: comments, key order, refusal ------------------------------------------------
@pytest.fixture
def hand_written(sample_kb: Path) -> Path:
    path = sample_kb / GOAL / "workers" / "scout" / "definition.yaml"
    path.write_text(HAND_WRITTEN)
    return path


def test_update_worker_keeps_comments_and_key_order(
    service: Service, hand_written: Path, clock
) -> None:
    service.index.sync()
    before_next = service.workers.intent(GOAL, "scout").next_run_at
    view = service.workers.update(
        GOAL, "scout", schedule={"cron": "45 21 * * *", "timezone": "Europe/Berlin"}
    )
    after = hand_written.read_text()
    diff = [
        line
        for line in difflib.unified_diff(
            HAND_WRITTEN.splitlines(), after.splitlines(), lineterm="", n=0
        )
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]
    assert diff == ['-    cron: "30 20 * * *"', '+    cron: "45 21 * * *"']
    assert view.schedule == "45 21 * * *"
    assert view.next_run_at != before_next
    assert view.next_run_at == datetime(2026, 12, 2, 20, 45, tzinfo=UTC)


def test_update_worker_timeout_runner_and_prompt(
    service: Service, hand_written: Path, sample_kb: Path
) -> None:
    service.workers.update(
        GOAL, "scout", timeout="2m", runner={"builtin": "report"}, prompt="# new\n"
    )
    data, text = load_yaml_mapping(hand_written, "definition.yaml")
    assert list(data) == ["timeout", "description", "runner", "schedule", "capabilities"]
    assert data["timeout"] == "2m" and data["runner"] == {"builtin": "report"}
    assert "# raised from 30s on 2026-11-30" in text and "# end of file" in text
    assert (sample_kb / GOAL / "workers" / "scout" / "prompt.md").read_text() == "# new\n"
    intent = service.workers.intent(GOAL, "scout")
    assert intent.runner == {"builtin": "report"} and intent.timeout_s == 120


@pytest.mark.parametrize(
    "broken, line, reason",
    [
        ("schedule:\n  cron: '30 20 * * *'\n  timezone: [Europe/Berlin\n", 4, "flow"),
        ("schedule:\n  cron: '30 20 * * *'\n timezone: UTC\n", 3, ""),
        ("schedule: {every: 5m}\ntimeout: 1m\ntimeout: 2m\n", 3, "given twice"),
        ("schedule: {every: 5m}\nretries: 3\n", 2, "unknown field 'retries'"),
        ("schedule:\n  cron: '61 20 * * *'\n", 2, "invalid cron"),
        ("schedule:\n  cron: '0 20 * * *'\n  timezone: Europe/Berlln\n", 3, "unknown timezone"),
    ],
)
def test_update_worker_refuses_a_broken_file(
    service: Service, sample_kb: Path, broken: str, line: int, reason: str
) -> None:
    path = sample_kb / GOAL / "workers" / "scout" / "definition.yaml"
    path.write_text(broken)
    with pytest.raises(KBError) as err:
        service.workers.update(GOAL, "scout", schedule={"every": "10m"})
    assert err.value.path == f"{GOAL}/workers/scout/definition.yaml"
    assert err.value.line == line
    assert reason in err.value.reason
    assert path.read_text() == broken  # never rewritten


def test_update_worker_refuses_an_invalid_change(service: Service, hand_written: Path) -> None:
    for change in (
        {"schedule": {"cron": "not cron"}},
        {"schedule": {"cron": "0 9 * * *", "timezone": "Mars/Olympus"}},
        {"schedule": {"cron": "0 9 * * *", "every": "5m"}},
        {"timeout": "soon"},
        {"runner": {"builtin": "nope"}},
    ):
        with pytest.raises(GoalsuiError):
            service.workers.update(GOAL, "scout", **change)
        assert hand_written.read_text() == HAND_WRITTEN


# -- YAML errors and validation problems ----------------------------------------------------------
def test_broken_yaml_names_file_line_and_reason() -> None:
    with pytest.raises(KBError) as err:
        parse_yaml("name: x\ntask: [unclosed\nowner: me\n", "g/definition.yaml")
    assert err.value.path == "g/definition.yaml" and err.value.line == 3
    assert str(err.value).startswith("g/definition.yaml:3: ")
    with pytest.raises(KBError, match=r"^f\.yaml:2: aliases"):
        parse_yaml("a: &x [1]\nb: *x\n", "f.yaml")


BROKEN_FILES = {
    # path: (content, line, words in the message)
    f"{GOAL}/workers/scout/definition.yaml": (
        "# scout\nschedule:\n  cron: '30 20 * * *'\n  timezone: Europe/Berlin\nretries: 3\n",
        5,
        "unknown field 'retries'",
    ),
    f"{GOAL}/workers/auditor/definition.yaml": (
        "schedule:\n  cron: '30 25 * * *'\n  timezone: Europe/Berlin\n",
        2,
        "invalid cron expression",
    ),
    f"{GOAL}/workers/gardener/definition.yaml": (
        "schedule:\n  cron: '0 5 * * *'\n  timezone: Europe/Berlim\n",
        3,
        "unknown timezone",
    ),
    "docs-review-bfb1526f/definition.yaml": (
        "goal_id: docs-review-bfb1526f\nname: Docs\ntask: [oops\n",
        4,
        "",
    ),
    "blog-drafts-c24a3db0/workers/drafter/definition.yaml": (
        "schedule:\n  every: 5m\nrunner:\n  builtin: magic\n",
        4,
        "unknown builtin runner",
    ),
    "goalsui.yaml": (
        "runner:\n  command: [cat]\nretry:\n  base_seconds: 2\n  tries: 3\n",
        5,
        "unknown field",
    ),
}


def break_kb(kb: Path) -> dict[str, bytes]:
    for rel, (content, _, _) in BROKEN_FILES.items():
        (kb / rel).write_text(content)
    return {rel: (kb / rel).read_bytes() for rel in BROKEN_FILES}


def test_every_problem_is_reported_with_file_and_line(sample_kb: Path, make_service) -> None:
    service = make_service(sample_kb)
    good = service.workers.intent(GOAL, "scout")
    saved = break_kb(sample_kb)
    problems = service.index.sync()
    found = {p.path: p for p in problems}
    assert set(found) == set(BROKEN_FILES)
    for rel, (_, line, words) in BROKEN_FILES.items():
        assert found[rel].line == line, (rel, found[rel])
        assert words in found[rel].message
    assert {p.path for p in service.index.doctor()} == set(BROKEN_FILES)
    # the last good version keeps running; nothing was rewritten
    kept = service.workers.intent(GOAL, "scout")
    assert (kept.status, kept.schedule, kept.next_run_at) == (
        good.status,
        good.schedule,
        good.next_run_at,
    )
    assert service.goals.get("docs-review-bfb1526f").workers
    assert "docs-review-bfb1526f/definition.yaml" in (
        service.goals.get("docs-review-bfb1526f").error or ""
    )
    assert {rel: (sample_kb / rel).read_bytes() for rel in BROKEN_FILES} == saved


def test_goal_folder_with_a_bad_name_is_a_problem_not_a_crash(
    sample_kb: Path, make_service
) -> None:
    bad = sample_kb / "Bad Name"
    bad.mkdir()
    (bad / "definition.yaml").write_text("goal_id: Bad Name\nname: x\n")
    service = make_service(sample_kb)
    problems = service.index.doctor()
    assert [p.path for p in problems] == ["Bad Name"]
    assert "invalid goal id" in problems[0].message


def test_kb_write_validates_definitions_and_refuses_broken_yaml(
    service: Service, sample_kb: Path
) -> None:
    path = sample_kb / GOAL / "workers" / "scout" / "definition.yaml"
    before = path.read_bytes()
    for text in (
        "schedule: [\n",
        "- a\n- b\n",
        "schedule: {cron: '* * *'}\n",
        "schedule: {every: 1m}\nx: 1\n",
    ):
        with pytest.raises(KBError):
            service.files.write(GOAL, "workers/scout/definition.yaml", text)
        with pytest.raises(KBError):
            service.files.write(GOAL, "workers\\scout\\definition.yaml", text)
    with pytest.raises(KBError):
        service.files.write(GOAL, "state.yaml", "plan: [\n")
    with pytest.raises(KBError):
        service.files.write(GOAL, "definition.yaml", "goal_id: other-goal\nname: x\n")
    assert path.read_bytes() == before


def test_kb_write_of_a_worker_definition_replans(service: Service, sample_kb: Path) -> None:
    service.files.write(
        GOAL,
        "workers/scout/definition.yaml",
        "schedule:\n  cron: '0 13 * * *'\n  timezone: UTC\n",
    )
    intent = service.workers.intent(GOAL, "scout")
    assert intent.schedule == "0 13 * * *"
    assert intent.next_run_at == datetime(2026, 12, 2, 13, 0, tzinfo=UTC)


def test_kb_class_reads_goal_trees(sample_kb: Path) -> None:
    kb = KB(sample_kb)
    loaded = {g.goal_id: g for g in kb.scan()}
    assert set(loaded) == set(kb.goal_ids())
    night = loaded[GOAL]
    assert night.problems == []
    assert {"commander", "scout", "reporter"} <= set(night.workers)
    assert night.workers["reporter"].runner.builtin == "report"
    assert kb.config().silent_token == "NOTHING_TO_REPORT"
