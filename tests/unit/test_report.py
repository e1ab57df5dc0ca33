"""The morning report: every run with its status, each statement with its source; the CLI."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from goalsui.cli import main
from goalsui.domain.nightshift import night_of, night_window
from goalsui.kb.layout import WorkerSeed
from goalsui.runners.report import compile_report, list_reports
from goalsui.runners.turn import run_turn
from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
NIGHT = datetime(2026, 12, 2, 19, 0, tzinfo=UTC)  # 20:00 Berlin
MORNING = datetime(2026, 12, 3, 6, 30, tzinfo=UTC)  # 07:30 Berlin


def seed(name: str, runner: dict, cron: str) -> WorkerSeed:
    return WorkerSeed(
        name,
        {
            "schedule": {"cron": cron, "timezone": "Europe/Berlin"},
            "runner": runner,
            "timeout": "30s",
        },
        prompt=f"# {name}\n",
    )


def script(name: str, *args: str) -> dict:
    return {"command": ["{python}", str(SCRIPTS / name), *args]}


def record(service: Service, intent: Intent, status: str, at: datetime, **kw: Any) -> IntentRun:
    with service.store.write() as s:
        run = IntentRun(
            intent_id=intent.id,
            status=status,
            planned_at=kw.pop("planned_at", at),
            started_at=at,
            finished_at=kw.pop("finished_at", at + timedelta(seconds=3)),
            **kw,
        )
        s.add(run)
        s.flush()
    return run


async def real_run(service: Service, clock, intent: Intent, at: datetime) -> IntentRun:
    clock.set(at)
    run = record(service, intent, "running", at, finished_at=None)
    outcome = await run_turn(service, intent, run, cancel=asyncio.Event())
    with service.store.write() as s:
        row = s.get(IntentRun, run.id)
        assert row is not None
        row.status, row.reason, row.exit_code = outcome.status, outcome.reason, outcome.exit_code
        row.output_path = str(outcome.output_path) if outcome.output_path else None
        row.finished_at = at + timedelta(seconds=2)
        s.add(row)
    return service.runs.get(run.id)


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:
    return make_service(empty_kb, clock=clock)


@pytest.fixture
async def night(svc: Service, clock):
    view = svc.goals.create(
        "Night Crew",
        "test the report",
        [
            seed("alpha", script("run_result.py", "alpha"), "0 20 * * *"),
            seed("beta", script("run_fail.py", "3"), "0 21 * * *"),
            seed("gamma", script("run_silent.py"), "0 22 * * *"),
            seed("delta", script("run_result.py", "delta"), "0 23 * * *"),
            seed("reporter", {"builtin": "report"}, "30 7 * * *"),
        ],
    )
    other = svc.goals.create(
        "Other Goal", "x", [seed("alpha", script("run_result.py"), "0 20 * * *")]
    )
    goal = view.goal_id
    w = {name: svc.workers.intent(goal, name) for name in ("alpha", "beta", "gamma", "delta")}
    runs = {
        "ok": await real_run(svc, clock, w["alpha"], NIGHT),
        "failed": await real_run(svc, clock, w["beta"], NIGHT + timedelta(hours=1)),
        "silent": await real_run(svc, clock, w["gamma"], NIGHT + timedelta(hours=2)),
        "skipped": record(svc, w["delta"], "skipped", NIGHT + timedelta(hours=3), reason="overlap"),
        "missed": record(
            svc, w["delta"], "missed", NIGHT + timedelta(hours=4), reason="overdue by more than 24h"
        ),
        "interrupted": record(
            svc, w["delta"], "interrupted", NIGHT + timedelta(hours=5), reason="lease expired"
        ),
        "timeout": record(
            svc, w["delta"], "timeout", NIGHT + timedelta(hours=6), reason="timed out after 30s"
        ),
        "cancelled": record(
            svc,
            w["delta"],
            "cancelled",
            NIGHT + timedelta(hours=7),
            reason="cancelled by the operator",
        ),
    }
    before = record(
        svc, w["alpha"], "ok", NIGHT - timedelta(days=1, hours=2)
    )  # the night before: not in it
    elsewhere = record(svc, svc.workers.intent(other.goal_id, "alpha"), "failed", NIGHT)
    clock.set(MORNING)
    return {"goal": goal, "runs": runs, "excluded": [before.id, elsewhere.id]}


async def test_report_lists_every_run_with_status_and_source(svc: Service, night) -> None:
    report = compile_report(svc, night["goal"], date(2026, 12, 2), MORNING)
    text = report.markdown
    # named by the night's start (20:00 on the 2nd), like its branches, not by the morning
    assert report.path == svc.kb.goal_dir(night["goal"]) / "reports" / "2026-12-02.md"
    assert report.path.read_text() == text
    assert text.startswith("# Night Crew report, night of 2026-12-02\n")
    timeline = text[text.index("## Timeline") : text.index("## Findings")]
    rows = {
        int(m.group(1)): line
        for line in timeline.splitlines()
        if (m := re.match(r"\| \w+ \| (\d+) \|", line))
    }
    assert set(rows) == {r.id for r in night["runs"].values()}
    for status, run in night["runs"].items():
        assert f"| {status}" in rows[run.id], rows[run.id]
        assert f"run {run.id}" in rows[run.id].rsplit("|", 2)[-2]  # the source column names the run
    for run_id in night["excluded"]:
        assert run_id not in rows
    # planned vs actual, in the reporter's timezone (Berlin), and the duration
    assert "| 20:00:00 | 20:00:00 | 2.0s | ok |" in rows[night["runs"]["ok"].id]
    # ok -> its outbox file
    ok = night["runs"]["ok"]
    outbox = re.search(rf"workers/alpha/outbox/\d{{8}}T\d{{6}}Z-{ok.id}\.md", rows[ok.id]).group(0)
    assert (svc.kb.goal_dir(night["goal"]) / outbox).is_file()
    assert f"### alpha (run {ok.id}, {outbox})" in text
    assert "> ## alpha: 3 findings, 17 files" in text
    # failed -> the line of its run log that holds the error
    failed = night["runs"]["failed"]
    ref = re.search(rf"{failed.id}\.log:(\d+)", rows[failed.id])
    assert ref is not None
    log_line = Path(failed.output_path).read_text().splitlines()[int(ref.group(1)) - 1]
    assert log_line == "[stderr] disk quota exceeded on /data"
    # silent -> the goal log line that recorded it
    silent = night["runs"]["silent"]
    log_ref = re.search(r"log/(\d{4}-\d{2}-\d{2}\.md):(\d+)", rows[silent.id])
    assert log_ref is not None
    entry = (
        (svc.kb.goal_dir(night["goal"]) / "log" / log_ref.group(1))
        .read_text()
        .splitlines()[int(log_ref.group(2)) - 1]
    )
    assert f"run {silent.id} gamma silent" in entry
    # skipped/missed have no file: the scheduler's record is the source
    assert f"run {night['runs']['missed'].id}, scheduler record" in rows[night["runs"]["missed"].id]


async def test_summary_failures_and_every_statement_has_a_source(svc: Service, night) -> None:
    report = compile_report(svc, night["goal"], date(2026, 12, 2), MORNING)
    text = report.markdown
    runs = night["runs"]
    assert len(runs) == 8 and "- 8 runs: " in text
    for status, run in runs.items():
        assert f"1 {status} (run {run.id})" in text
    assert (
        f"- 8 runs: 1 ok (run {runs['ok'].id}), 1 silent (run {runs['silent'].id}), 1 failed (run {runs['failed'].id})"
        in text
    )
    failures = text[text.index("## Failures") : text.index("## Changes")]
    for status in ("failed", "timeout", "interrupted", "cancelled", "missed"):
        assert f"run {runs[status].id}, {status}" in failures
    assert "exit 3: disk quota exceeded on /data" in failures
    assert "partial result" in failures  # the last lines of the failed run's output
    owner = text[text.index("## For the owner") :]
    assert "workers/beta/prompt.md" in owner
    for line in text.splitlines():
        if (
            line.startswith("- ")
            or line.startswith("| ")
            and not line.startswith(("| worker", "| ---"))
        ):
            assert re.search(r"runs? \d+|source:", line), f"statement without a source: {line}"
    # The summary is what the reporter delivers.
    assert report.summary.startswith("Night Crew report, night of 2026-12-02: 8 runs:")
    assert (
        f"beta run {runs['failed'].id} failed: exit 3: disk quota exceeded on /data"
        in report.summary
    )
    assert report.summary.rstrip().endswith("Report: reports/2026-12-02.md")


async def test_the_window_ends_now(svc: Service, night) -> None:
    now = NIGHT + timedelta(minutes=30)
    report = compile_report(svc, night["goal"], date(2026, 12, 2), now, write=False)
    assert f"- 1 runs: 1 ok (run {night['runs']['ok'].id})." in report.markdown
    assert not report.path.exists()


async def test_snapshots_and_diff_between_reports(svc: Service, night, clock) -> None:
    goal_dir = svc.kb.goal_dir(night["goal"])
    first = compile_report(svc, night["goal"], date(2026, 12, 2), MORNING).markdown
    assert "No earlier snapshot" in first
    assert (goal_dir / "reports" / ".snapshots" / "2026-12-02" / "protocol.md").read_text() == (
        goal_dir / "protocol.md"
    ).read_text()
    (goal_dir / "protocol.md").write_text(
        (goal_dir / "protocol.md").read_text() + "\n## KPI\n- new rule: ticks under 1m\n"
    )
    second = compile_report(
        svc, night["goal"], date(2026, 12, 3), MORNING + timedelta(days=1)
    ).markdown
    assert "`protocol.md`: +3 −0 lines since the report of the night of 2026-12-02" in second
    assert "+- new rule: ticks under 1m" in second
    assert "`state.yaml`: unchanged since the report of the night of 2026-12-02" in second
    # Rebuilding a day diffs against the previous day, not against itself.
    again = compile_report(
        svc, night["goal"], date(2026, 12, 3), MORNING + timedelta(days=1)
    ).markdown
    assert "+- new rule: ticks under 1m" in again
    assert [r.night for r in list_reports(svc, night["goal"])] == [
        date(2026, 12, 2),
        date(2026, 12, 3),
    ]


async def test_old_reports_named_by_their_morning_are_found_and_renamed_on_write(
    svc: Service, night, empty_kb: Path, tmp_path: Path, capsys
) -> None:
    """Before the night rule a report was named by its morning: 2026-12-02.md held the
    night of the 1st (heading ``# X report 2026-12-02``), and its snapshot likewise. Such
    files are listed under their night, --date of the night finds them, and writing a
    report renames them first, so the night of the 2nd never overwrites the 1st's."""
    goal = night["goal"]
    reports = svc.kb.goal_dir(goal) / "reports"
    (reports / "2026-12-01.md").write_text("# Night Crew report 2026-12-01\n\nthe 30th\n")
    (reports / "2026-12-02.md").write_text("# Night Crew report 2026-12-02\n\nthe 1st\n")
    (reports / ".snapshots" / "2026-12-02").mkdir(parents=True)
    (reports / ".snapshots" / "2026-12-02" / "protocol.md").write_text("old protocol\n")
    listed = list_reports(svc, goal)
    assert [(r.night, r.path.name, r.legacy) for r in listed] == [
        (date(2026, 11, 30), "2026-12-01.md", True),
        (date(2026, 12, 1), "2026-12-02.md", True),
    ]
    base = ["--kb", str(empty_kb), "--state-dir", str(tmp_path / "state")]
    assert main([*base, "report", goal, "--date", "2026-12-01"]) == 0
    assert "the 1st" in capsys.readouterr().out
    report = compile_report(svc, goal, date(2026, 12, 2), MORNING)
    assert report.path.name == "2026-12-02.md"
    assert (reports / "2026-12-01.md").read_text().endswith("the 1st\n")
    assert (reports / "2026-11-30.md").read_text().endswith("the 30th\n")
    assert (reports / ".snapshots" / "2026-12-01" / "protocol.md").read_text() == "old protocol\n"
    # the diff is against the report of the night before (its snapshot, renamed)
    assert "since the report of the night of 2026-12-01" in report.markdown
    assert [(r.night, r.path.name, r.legacy) for r in list_reports(svc, goal)] == [
        (date(2026, 11, 30), "2026-11-30.md", False),
        (date(2026, 12, 1), "2026-12-01.md", False),
        (date(2026, 12, 2), "2026-12-02.md", False),
    ]


async def test_a_late_reporter_reports_the_night_it_was_due_for(svc: Service, night) -> None:
    """The reporter due at 07:30 but run at 13:00 (after the night turned over at noon)
    still reports the night of the 2nd, up to its end."""
    goal = night["goal"]
    reporter = svc.workers.intent(goal, "beta")
    late = MORNING + timedelta(hours=5, minutes=30)
    own = record(svc, reporter, "running", late, planned_at=MORNING, finished_at=None)
    report = compile_report(svc, goal, None, late, exclude_run_id=own.id, write=False)
    assert report.night == date(2026, 12, 2) and report.path.name == "2026-12-02.md"
    assert " to 2026-12-03 12:00 (Europe/Berlin);" in report.markdown  # the night's end, noon
    # without a run of its own (the CLI), the night of now: the one begun at noon
    assert compile_report(svc, goal, None, late, write=False).night == date(2026, 12, 3)


async def test_report_cli_lists_prints_and_json(
    svc: Service, night, empty_kb: Path, tmp_path: Path, capsys
) -> None:
    compile_report(svc, night["goal"], date(2026, 12, 2), MORNING)
    base = ["--kb", str(empty_kb), "--state-dir", str(tmp_path / "state")]
    assert main([*base, "report"]) == 0
    listing = capsys.readouterr().out
    assert night["goal"] in listing and "2026-12-02" in listing
    assert "other-goal" not in listing  # no reporter, no reports
    # --date names the night by the date it starts
    assert main([*base, "report", night["goal"], "--date", "2026-12-02"]) == 0
    assert capsys.readouterr().out.startswith("# Night Crew report, night of 2026-12-02\n")
    assert main([*base, "report", night["goal"], "--date", "2026-12-02", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["night"] == data["date"] == "2026-12-02" and data["compiled"] is False
    assert data["markdown"].startswith("# Night Crew report")
    assert main([*base, "report", night["goal"], "--json"]) == 0  # the night so far, compiled
    data = json.loads(capsys.readouterr().out)
    assert data["compiled"] is True and data["written"] is False
    assert main([*base, "report", night["goal"], "--list", "--json"]) == 0
    assert [r["night"] for r in json.loads(capsys.readouterr().out)] == ["2026-12-02"]
    assert main([*base, "report", night["goal"], "--date", "03/12/2026"]) == 1
    assert "invalid --date" in capsys.readouterr().err
    assert main([*base, "report", night["goal"], "--date", "2099-01-01"]) == 1
    assert "no report for the night of 2099-01-01 yet" in capsys.readouterr().err
    assert main([*base, "report", "no-such-goal"]) == 1
    assert "no goal" in capsys.readouterr().err


def kb_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), folders included as b''."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"")
        for p in sorted(root.rglob("*"))
    }


async def test_report_cli_only_reads_and_its_window_runs_to_now(
    svc: Service, night, empty_kb: Path, tmp_path: Path, capsys
) -> None:
    goal = night["goal"]
    beta = svc.workers.intent(goal, "beta")
    real_now = datetime.now(UTC)
    # in the night under way (it began at the last noon in Berlin): an hour ago, or less
    begun = night_window(night_of(real_now, "Europe/Berlin"), "Europe/Berlin")[0]
    at = max(real_now - timedelta(hours=1), begun + (real_now - begun) / 2)
    an_hour_ago = record(svc, beta, "failed", at, reason="exit 3: late")
    with svc.store.write() as s:
        row = s.get(Intent, beta.id)
        assert row is not None
        row.status, row.consecutive_failures, row.last_error = "failed", 5, "exit 3: late"
        s.add(row)
    base = ["--kb", str(empty_kb), "--state-dir", str(tmp_path / "state")]
    before = kb_tree(empty_kb)
    for args in (
        [goal],
        [goal, "--json"],
        [goal, "--date", "2026-12-02"],
        [goal, "--list"],
        [],
    ):
        assert main([*base, "report", *args]) == 0, args
    out = capsys.readouterr().out
    assert kb_tree(empty_kb) == before  # not one file added, removed or changed
    assert f"| beta | {an_hour_ago.id} |" in out and "exit 3: late" in out
    assert "## Auto-disabled" in out and "beta is auto-disabled after 5 consecutive" in out
    assert main([*base, "report", goal, "--write", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["written"] is True and data["compiled"] is True
    assert Path(data["path"]).read_text(encoding="utf-8") == data["markdown"]
    assert kb_tree(empty_kb) != before
