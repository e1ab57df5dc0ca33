"""Console start-up: a light entry path, a first frame from the KB, then the records.

The console paints the goal tree from a quick read of the KB folders while the service
(and the database stack it imports) opens in a worker; the panes say "loading…" until
the records replace the preview. The command line builds its parser without importing
the service.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from goalsui.errors import GoalsuiError
from goalsui.kb.quick import read_goals
from goalsui.service import Service
from goalsui.tui.app import make_app
from tests.base_kit import FakeClock
from tests.tui_kit import (
    NIGHT,
    PULSE,
    REPO,
    label,
    screen_text,
    settle,
    wait_for,
)

SIZE = (140, 40)
HEAVY = ("sqlalchemy", "sqlmodel", "pydantic", "alembic", "croniter", "apscheduler")
COMMANDS = {
    "bench", "config", "console", "daemon", "db", "demo", "doctor", "event", "events", "goal", "init",
    "intent", "kb", "mcp", "nightshift", "plan", "report", "runs", "schedule", "serve", "thread", "todo",
    "worker",
}  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)


# -- the command line ---------------------------------------------------------------------
def test_parser_has_every_subcommand_and_help_lists_them() -> None:
    import argparse

    from goalsui.cli import build_parser

    parser = build_parser()
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found |= set(action.choices)
    assert found == COMMANDS
    out = run("-m", "goalsui", "--help")
    assert out.returncode == 0, out.stderr
    for command in COMMANDS:
        assert f"    {command} " in out.stdout or f"    {command}\n" in out.stdout, command
    sub = run("-m", "goalsui", "goal", "--help")
    assert sub.returncode == 0 and "create" in sub.stdout and "pause" in sub.stdout


def test_each_command_line_builds_only_its_module() -> None:
    """The lazy parser's table names each module's commands exactly."""
    import argparse

    from goalsui.cli import COMMAND_MODULES, build_parser

    for names in COMMAND_MODULES.values():
        for name in names:
            parser = build_parser(name)
            found = set()
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    found |= set(action.choices)
            assert found == set(names), name


def test_version() -> None:
    from goalsui import __version__

    out = run("-m", "goalsui", "--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"goalsui {__version__}"


def test_entry_path_imports_no_database_stack() -> None:
    """What ``goalsui`` imports before the app starts: no SQLAlchemy, no service."""
    code = (
        "import sys, json\n"
        "from goalsui.cli import build_parser\n"
        "build_parser().parse_args(['console'])\n"
        "import goalsui.cli.runtime, goalsui.tui.app, goalsui.tui.preview\n"
        f"print(json.dumps([m for m in {HEAVY + ('goalsui.service', 'goalsui.store')!r} "
        "if m in sys.modules]))\n"
    )
    out = run("-c", code)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


#: a script that runs a real ``goalsui console --no-scheduler``: what it saw (``seen``)
#: is printed as JSON; the listeners in between (indented into ``traced``) fill it
CONSOLE_HEAD = """
import json, sys
import goalsui.tui.app as tapp
from goalsui.cli import main

HEAVY = {heavy!r}
seen = {{}}
make = tapp.make_app

def traced(*args, **kwargs):
    app = make(*args, **kwargs)
"""
CONSOLE_TAIL = """    return app

tapp.make_app = traced
code = main(["--kb", sys.argv[1], "--state-dir", sys.argv[2], "console", "--no-scheduler"])
print(json.dumps({{"code": code, **seen}}))
"""
#: the first paint and the first records
PAINT_AND_RECORDS = """    def painted():
        seen["paint"] = [m for m in HEAVY if m in sys.modules]
        seen["paint_goals"] = len(app.dashboard.goals) if app.dashboard else 0
        seen["paint_preview"] = bool(app.dashboard and app.dashboard.preview)
    def records():
        seen["records"] = [m for m in HEAVY if m in sys.modules]
        seen["records_preview"] = app.dashboard.preview
        app.exit(0)
    app.startup.first_paint_listeners.append(painted)
    app.startup.records_listeners.append(records)
"""


def traced_console(
    kb: Path, state: Path, tmp_path: Path, listeners: str = PAINT_AND_RECORDS
) -> dict[str, Any]:
    """Run a real ``goalsui console`` (headless driver) on ``kb``; what its ``listeners``
    saw (by default: at its first paint and its first records)."""
    script = tmp_path / "console_run.py"
    script.write_text((CONSOLE_HEAD + listeners + CONSOLE_TAIL).format(heavy=HEAVY), "utf-8")
    out = subprocess.run(
        [sys.executable, str(script), str(kb), str(state)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    return seen


def test_console_paints_before_the_database_stack_is_imported(tmp_path: Path) -> None:
    """A real ``goalsui console`` run (headless driver): the first paint comes first."""
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "sample_kb", kb)
    seen = traced_console(kb, tmp_path / "state", tmp_path)
    assert seen["paint"] == [], "the first frame waited for the database stack"
    assert seen["paint_preview"] and seen["paint_goals"] == 4
    assert "sqlalchemy" in seen["records"] and seen["records_preview"] is False


def test_missing_kb_is_one_line_before_any_paint(tmp_path: Path) -> None:
    out = run("-m", "goalsui", "--kb", str(tmp_path / "nope"), "--state-dir", str(tmp_path / "s"))
    assert out.returncode == 1
    assert out.stderr.startswith("goalsui: error: no KB at ") and out.stderr.count("\n") == 1
    assert not (tmp_path / "s").exists()


# -- the quick KB read ----------------------------------------------------------------------
def test_preview_reads_what_the_index_holds(demo: Service) -> None:
    """Names, order and workers from the quick read equal the service's (sample KB)."""
    quick = [
        (g.goal_id, g.name, g.status, [w.name for w in g.workers]) for g in read_goals(demo.kb.root)
    ]
    full = [(g.goal_id, g.name, g.status, [w.name for w in g.workers]) for g in demo.goals.list()]
    assert quick == full


def test_preview_handles_odd_definitions(tmp_path: Path) -> None:
    def goal(name: str, definition: str, workers: tuple[str, ...] = ()) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "definition.yaml").write_text(definition, encoding="utf-8")
        for w in workers:
            (tmp_path / name / "workers" / w).mkdir(parents=True)
            (tmp_path / name / "workers" / w / "definition.yaml").write_text("{}", encoding="utf-8")

    goal("a-plain", "name: Plain name\nsort_order: 2\n", ("w2", "w1"))
    goal("b-quoted", "# c\nname: 'It''s: quoted'\nstatus: paused\nsort_order: 1\n")
    goal("c-escaped", 'name: "tab\\there"\nsort_order: 3\n')
    goal("d-broken", "name: [unclosed\nsort_order: 0\n")
    goal("e-block", "name: >-\n  Folded\n  name\ntask: |\n  name: not this\nsort_order: 4\n")
    (tmp_path / "f-no-definition").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "definition.yaml").write_text("name: x\n", encoding="utf-8")
    (tmp_path / "a-plain" / "workers" / "not-a-worker").mkdir()
    goals = read_goals(tmp_path)
    assert [(g.goal_id, g.name, g.status) for g in goals] == [
        ("d-broken", "d-broken", "active"),  # unreadable YAML: the folder name
        ("b-quoted", "It's: quoted", "paused"),
        ("a-plain", "Plain name", "active"),
        ("c-escaped", "tab\there", "active"),
        ("e-block", "Folded name", "active"),
    ]
    assert [w.name for w in goals[2].workers] == ["w1", "w2"]


# -- the console ------------------------------------------------------------------------------
async def test_first_frame_shows_the_kb_then_the_records(
    demo: Service, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preview is painted and marked as loading; the records replace it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user themes
    gate = threading.Event()

    def opener() -> Service:
        if not gate.wait(60):
            raise GoalsuiError("the test never opened the gate")
        return demo

    app = make_app(
        None, scheduler=False, watch=False, clock=clock, opener=opener, kb_root=demo.kb.root
    )
    shown: list[str] = []
    app.detail_listeners.append(lambda tab, text: shown.append(text))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: app.startup.first_paint_at is not None, what="the first paint"
        )
        main = app.main
        assert not app.service_ready and app.dashboard is not None and app.dashboard.preview
        assert app.theme == "goalsui-dark"  # built in: the theme files are read after
        assert [label(n).split("  ")[0] for n in main.goals.goal_nodes.values()] == [
            g.name for g in demo.goals.list()
        ]
        text = screen_text(app)
        assert "loading…" in text and "records loading…" in text
        assert "Nothing failed" not in text  # no claim about records not yet read
        for pane in ("threads", "timeline", "failed"):
            assert main.query_one(f"#{pane}-pane").border_subtitle == "loading…"
        worker = main.goals.child_nodes[f"worker/{PULSE}/pulse"]
        assert "loading…" in label(worker)
        # keys that need the records are off; screens say why instead of opening
        main.goals.select_key(f"worker/{PULSE}/pulse")
        await pilot.pause()
        assert main.check_action("pause", ()) is False
        await pilot.press("p")
        app.action_open_screen("failures")
        await pilot.pause()
        assert len(app.screen_stack) == 1
        await wait_for(pilot, lambda: bool(shown), what="the detail pane")
        assert main.detail.current.rel == "workers/pulse/prompt.md"
        assert shown[-1] == "loading…"
        assert app.startup.records_at is None
        gate.set()
        await settle(app, pilot)
        assert app.service_ready and app.startup.records_at is not None
        assert {"goalsui-dark", "goalsui-light"} <= set(app.theme_names)
        assert not app.dashboard.preview
        assert "every 1m" in label(main.goals.child_nodes[f"worker/{PULSE}/pulse"])
        text = screen_text(app)
        assert "loading…" not in text and "refreshed" in text
        assert main.query_one("#threads-pane").border_subtitle != "loading…"
        assert NIGHT in main.goals.goal_nodes
        prompt = (demo.kb.root / PULSE / "workers" / "pulse" / "prompt.md").read_text()
        assert main.detail.current.rel == "workers/pulse/prompt.md" and shown[-1] == prompt
        assert main.check_action("pause", ()) is not False


async def test_open_failure_ends_the_console_with_the_error(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "sample_kb", kb)
    problem = GoalsuiError("cannot open the database x: refused")

    def opener() -> Service:
        raise problem

    app = make_app(None, scheduler=False, watch=False, opener=opener, kb_root=kb)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app._exit, what="the console to end")
    assert app.startup.open_error is problem
    assert app.return_code == 1


def test_built_in_default_theme_is_the_bundled_file() -> None:
    """The first frame's theme (built in) looks exactly like ``themes/goalsui-dark.yaml``."""
    from goalsui.bundled import find_themes_dir
    from goalsui.tui.themes import DEFAULT_THEME, FALLBACK, load_theme_file

    folder = find_themes_dir()
    assert folder is not None
    assert load_theme_file(folder / f"{DEFAULT_THEME}.yaml") == FALLBACK
