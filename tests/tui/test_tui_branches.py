"""The Reports screen's branch review: diff, approve (merge) and reject (delete) by key.

A real git repository with two nightshift branches, a real nightshift goal (created by
the service's ``init_nightshift``), the real console driven by its pilot.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.screens.modals import ConfirmScreen
from goalsui.tui.screens.reports import ReportsScreen
from goalsui.tui.widgets.branches_pane import BranchesPane, DiffScreen
from goalsui.tui.widgets.keyed_table import KeyedTable
from tests.base_kit import FakeClock
from tests.git_kit import git, make_repo
from tests.tui_kit import screen_text, settle, wait_for

NIGHT = date(2026, 12, 1)
ROOT = Path("/tmp/goalsui-snapshot-branches")  # fixed: paths appear on screen
FIX = "nightshift/2026-12-01/worker-1-fix-the-typo"
DOCS = "nightshift/2026-12-01/worker-2-document-the-setup"


def make_branches(path: Path) -> Path:
    make_repo(path)
    for branch, name, text in ((FIX, "README.md", "# project, fixed\n"), (DOCS, "SETUP.md", "x\n")):
        git(path, "checkout", "-q", "-b", branch, "main")
        (path / name).write_text(text)
        git(path, "add", name)
        git(path, "commit", "-q", "-m", f"night: {name}")
    git(path, "checkout", "-q", "main")
    return path


def night_scene(root: Path, clock: FakeClock) -> tuple[Service, str, Path]:
    shutil.rmtree(root, ignore_errors=True)
    repo = make_branches(root / "repo")
    (root / "kb").mkdir(parents=True)
    service = Service.open(root / "kb", None, root / "state", clock=clock, actor="operator")
    view = service.nightshift.init(repo, base="main", tz="Europe/Berlin", workers=2)
    for worker, task, branch in (
        ("worker-1", "Fix the typo", FIX),
        ("worker-2", "Document the setup", DOCS),
    ):
        item, _ = service.nightshift.plan_add(view.goal_id, worker, task, night=NIGHT)
        service.nightshift.set_item(
            view.goal_id,
            replace(item, status="done", branch=branch, commits=1, check="passed", run_id=7),
        )
        # as a task's end does: goalsui approves only branches it made, at the reviewed commit
        service.nightshift.record_branch(
            view.goal_id, branch, git(repo, "rev-parse", branch).strip()
        )
    report = service.nightshift.report_path(view.goal_id, NIGHT)  # reports/2026-12-01.md
    report.write_text(f"# Nightshift report, night of {NIGHT}\n\nTwo branches to review.\n")
    return service, view.goal_id, repo


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[tuple[Service, str, Path, FakeClock]]:
    clock = FakeClock(datetime(2026, 12, 2, 8, 0, tzinfo=UTC))
    service, goal_id, repo = night_scene(tmp_path, clock)
    yield service, goal_id, repo, clock
    service.close()


async def open_reports(app, pilot) -> BranchesPane:
    await settle(app, pilot)
    await pilot.press("M")
    await settle(app, pilot)
    assert isinstance(app.screen, ReportsScreen)
    pane = app.screen.query_one(BranchesPane)
    await wait_for(
        pilot, lambda: len(pane.query_one("#branches-table", KeyedTable).row_keys()) == 2
    )
    pane.query_one("#branches-table").focus()
    await settle(app, pilot)
    return pane


async def test_approve_asks_first_then_merges_and_the_list_updates(scene) -> None:
    service, goal_id, repo, clock = scene
    app = make_app(service, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_reports(app, pilot)
        table = pane.query_one("#branches-table", KeyedTable)
        assert table.row_keys() == [FIX, DOCS]
        table.move_cursor(row=0)
        await pilot.press("a")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # the safe answer changes nothing
        await settle(app, pilot)
        assert FIX in git(repo, "branch", "--list", "nightshift/*")
        await pilot.press("a")
        await settle(app, pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: table.row_keys() == [DOCS])
    assert len(git(repo, "rev-list", "--parents", "-n", "1", "main").split()) == 3
    assert (repo / "README.md").read_text() == "# project, fixed\n"
    actions = [j.action for j in service.journal.recent()]
    assert "nightshift approved" in actions
    assert {i.branch: i.status for i in service.nightshift.plan(goal_id)}[FIX] == "approved"


async def test_reject_deletes_after_confirmation_and_diff_shows_the_change(scene) -> None:
    service, goal_id, repo, clock = scene
    app = make_app(service, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_reports(app, pilot)
        table = pane.query_one("#branches-table", KeyedTable)
        table.move_cursor(row=1)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        assert "+x" in screen_text(app) and "SETUP.md" in screen_text(app)
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("d")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: table.row_keys() == [FIX])
    assert git(repo, "branch", "--list", "nightshift/*").split() == [FIX]
    head = git(repo, "rev-list", "-n", "1", "main").strip()
    assert git(repo, "log", "--format=%s", head).splitlines() == ["first"]  # base untouched
    assert "nightshift rejected" in [j.action for j in service.journal.recent()]


def test_reports_screen_with_branches_snapshot(utc, snap_compare, monkeypatch) -> None:
    import goalsui.kb.layout

    monkeypatch.setattr(goalsui.kb.layout, "new_goal_id", lambda name: "nightshift-repo-0123abcd")
    clock = FakeClock(datetime(2026, 12, 2, 8, 0, tzinfo=UTC))
    service, _, _ = night_scene(ROOT, clock)
    app = make_app(service, scheduler=False, watch=False, clock=clock, theme="goalsui-dark")

    async def before(pilot) -> None:
        await open_reports(pilot.app, pilot)
        await pilot.pause(0.1)

    try:
        assert snap_compare(app, terminal_size=(160, 48), run_before=before)
    finally:
        service.close()
