"""``goalsui demo`` replays the sample nightshift's last night (real scheduler, real
workers, the builtin reporter on a moving clock) so a newcomer has a morning report."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goalsui.demo import replay_last_night
from goalsui.runners.report import list_reports
from goalsui.service import Service
from tests.base_kit import run_cli

NIGHT = ["commander", "scout", "librarian", "auditor", "gardener", "reporter"]


def replay(sample_kb: Path, tmp_path: Path, now: datetime) -> list[tuple[str, str]]:
    return replay_last_night(
        lambda clock: Service.open(
            sample_kb, None, tmp_path / "state", actor="scheduler", sync=False, clock=clock
        ),
        now,
    )


def nightshift(service: Service) -> str:
    return next(g.goal_id for g in service.goals.list() if g.goal_id.startswith("nightshift-"))


def test_an_afternoon_demo_has_last_nights_report_and_nothing_overdue(
    sample_kb: Path, tmp_path: Path
) -> None:
    now = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)  # 16:00 in Berlin
    runs = replay(sample_kb, tmp_path, now)
    assert [w for w, _ in runs] == NIGHT
    assert all(status in ("ok", "silent") for _, status in runs), runs
    service = Service.open(sample_kb, None, tmp_path / "state", clock=lambda: now)
    try:
        goal = nightshift(service)
        # last night started on the 2nd: its report, read this morning, is named by that date
        assert [r.night.isoformat() for r in list_reports(service, goal)] == ["2026-12-02"]
        text = (Path(service.goals.get(goal).path) / "reports" / "2026-12-02.md").read_text()
        assert text.startswith("# Nightshift report, night of 2026-12-02\n")
        assert "From 2026-12-02 12:00 to 2026-12-03 07:30 (Europe/Berlin)" in text
        ran = service.runs.list(limit=50)
        assert len(ran) == len(NIGHT)  # no other goal fired while the clock moved
        for run in ran:
            if run.status != "ok" or service.intents.get(run.intent_id).worker == "reporter":
                continue
            assert f"| {run.id} | schedule |" in text
        nexts = [i.next_run_at for i in service.intents.list(goal_id=goal)]
        assert all(n is not None and n > now for n in nexts)  # the console finds none overdue
    finally:
        service.close()


def test_a_demo_before_dawn_replays_up_to_now(sample_kb: Path, tmp_path: Path) -> None:
    now = datetime(2026, 12, 3, 2, 0, tzinfo=UTC)  # 03:00 in Berlin: tonight is half done
    runs = replay(sample_kb, tmp_path, now)
    assert [w for w, _ in runs] == [*NIGHT, "commander", "scout", "librarian", "auditor"]
    service = Service.open(sample_kb, None, tmp_path / "state", clock=lambda: now)
    try:
        goal = nightshift(service)
        assert [r.night.isoformat() for r in list_reports(service, goal)] == ["2026-12-01"]
        assert all(i.next_run_at > now for i in service.intents.list(goal_id=goal))
    finally:
        service.close()


@pytest.mark.slow
def test_goalsui_demo_opens_with_a_morning_report(tmp_path: Path) -> None:
    res = run_cli("demo", "--print", "--keep", extra_env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    out = res.stdout
    kb = Path(out.splitlines()[0].removeprefix("KB "))
    try:
        assert kb.parent.parent == tmp_path
        assert f"stays in {kb.parent}" in res.stderr
        assert sorted(p.name for p in kb.glob("nightshift-*/reports/*.md"))
        assert "0 failed" in out.splitlines()[1]
    finally:
        shutil.rmtree(kb.parent, ignore_errors=True)  # the demo's scratch folder


@pytest.mark.slow
def test_goalsui_demo_print_names_a_path_that_still_exists(tmp_path: Path) -> None:
    res = run_cli("demo", "--print", extra_env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"KB {tmp_path}")
    kb = Path(res.stdout.splitlines()[0].removeprefix("KB "))
    assert res.stderr.startswith(f"demo: scratch KB {kb}\n")  # said when it opens
    assert kb.is_dir() and sorted(p.name for p in kb.iterdir())  # still there to look at
    assert f"stays in {kb.parent}" in res.stderr
