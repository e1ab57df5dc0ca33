"""``goalsui config set runner``, the warnings before a turn would fail on its runner,
and goal ids typed as a prefix or a slug (with "did you mean")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.base_kit import run_cli


def cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, kb=kb, state=state, timeout=60)


def test_config_set_runner_keeps_comments_and_warnings_come_first(tmp_path: Path) -> None:
    kb, state = tmp_path / "kb", tmp_path / "state"
    assert run_cli("init", str(kb)).returncode == 0
    made = cli(
        kb, state, "goal", "create", "Site checks", "--task", "t", "--worker", "w", "--every", "1h"
    )
    assert made.returncode == 0, made.stderr
    assert "no runner configured" in made.stderr  # warned at creation
    doctor = cli(kb, state, "doctor")
    assert doctor.returncode == 0 and "warning: no runner configured" in doctor.stdout
    before = (kb / "goalsui.yaml").read_text()
    done = cli(kb, state, "config", "set", "runner", "--command", "sh -c 'cat; echo hi'", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"runner": {"command": ["sh", "-c", "cat; echo hi"]}}
    after = (kb / "goalsui.yaml").read_text()
    assert "# goalsui KB settings" in after and before.splitlines()[0] in after  # comments kept
    assert "no runner configured" not in cli(kb, state, "doctor").stdout
    preset = cli(kb, state, "config", "set", "runner", "nope")
    assert preset.returncode == 1 and "unknown runner preset" in preset.stderr
    missing = cli(
        kb,
        state,
        "worker",
        "add",
        "site-checks",
        "x",
        "--every",
        "1h",
        "--command",
        "no-such-prog-q",
    )
    assert missing.returncode == 0 and "'no-such-prog-q' is not found" in missing.stderr


def test_goal_ids_from_a_prefix_or_the_slug(tmp_path: Path) -> None:
    kb, state = tmp_path / "kb", tmp_path / "state"
    assert run_cli("init", str(kb)).returncode == 0
    ids = []
    for name in ("Alpha docs", "Alpha site"):
        made = cli(kb, state, "goal", "create", name, "--task", "t", "--json")
        ids.append(json.loads(made.stdout)["goal_id"])
    shown = cli(kb, state, "goal", "show", "alpha-docs", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["goal_id"] == ids[0]
    assert (
        json.loads(cli(kb, state, "goal", "show", ids[1][:8], "--json").stdout)["goal_id"] == ids[1]
    )
    ambiguous = cli(kb, state, "goal", "show", "alpha")
    assert ambiguous.returncode == 1 and "ambiguous" in ambiguous.stderr
    typo = cli(kb, state, "goal", "show", "alpha-dosc")
    assert typo.returncode == 1 and f"did you mean {ids[0]}" in typo.stderr
