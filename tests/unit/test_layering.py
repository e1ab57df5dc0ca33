"""The layering of docs/architecture.md is enforced: import-linter contracts, and a clean core import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = (
    "The core never imports Textual or the console",
    "Console, CLI, bench and demo reach the store via the service",
    "Domain rules are pure",
)


def lint_imports(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_linter_contracts_are_kept() -> None:
    result = lint_imports(REPO, REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in CONTRACTS:
        assert f"{name} KEPT" in result.stdout


def test_the_contracts_catch_a_violation(tmp_path: Path) -> None:
    """Not hoped for: a copy of the package where the service imports textual and the CLI
    imports the store directly fails the lint; so does a benchmark importing the store."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        REPO / "goalsui", tmp_path / "goalsui", ignore=shutil.ignore_patterns("__pycache__")
    )
    service = tmp_path / "goalsui" / "service" / "api.py"
    service.write_text(service.read_text() + "\nimport textual  # noqa\n")
    common = tmp_path / "goalsui" / "cli" / "common.py"
    common.write_text(common.read_text() + "\nimport goalsui.store.db  # noqa\n")
    result = lint_imports(tmp_path, tmp_path)
    assert result.returncode == 1
    assert "The core never imports Textual or the console BROKEN" in result.stdout
    assert "Console, CLI, bench and demo reach the store via the service BROKEN" in result.stdout
    assert "Domain rules are pure KEPT" in result.stdout


def test_the_bench_may_not_import_the_store(tmp_path: Path) -> None:
    """bench/ seeds and counts through the service: importing the store breaks a contract."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        REPO / "goalsui", tmp_path / "goalsui", ignore=shutil.ignore_patterns("__pycache__")
    )
    bench = tmp_path / "goalsui" / "bench" / "multi.py"
    bench.write_text(bench.read_text() + "\nimport goalsui.store.tables  # noqa\n")
    result = lint_imports(tmp_path, tmp_path)
    assert result.returncode == 1
    assert "Console, CLI, bench and demo reach the store via the service BROKEN" in result.stdout
    assert "The core never imports Textual or the console KEPT" in result.stdout


CHECK = """
import importlib, json, pkgutil, sys
mods = ["goalsui.service", "goalsui.cli"]
import goalsui
if importlib.util.find_spec("goalsui.scheduler") is not None:
    mods.append("goalsui.scheduler")
for name in mods:
    importlib.import_module(name)
core = {m for m in sys.modules if m == "textual" or m.startswith(("textual.", "goalsui.tui"))}
from goalsui.cli import build_parser
build_parser()  # every command module, as `goalsui goal list` loads them
cli = {m for m in sys.modules if m == "textual" or m.startswith(("textual.", "goalsui.tui"))}
print(json.dumps({"core": sorted(core), "cli": sorted(cli)}))
"""


def test_core_import_does_not_load_textual() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert loaded["core"] == []
    assert loaded["cli"] == []  # a plain CLI command never pays for the console
