"""Bad input on the real command line (subprocesses): exit 1, exactly one line on stderr,
no traceback, nothing changed in the KB or the database."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from goalsui.service import Service
from tests.base_kit import clean_environ, cli_argv
from tests.hooks_kit import CI_ENV, SECRET, row_counts, tree_snapshot

GOAL = "nightshift-979afc6e"


def run_all(
    kb: Path, state: Path, commands: list[tuple[str, ...]]
) -> list[subprocess.CompletedProcess]:
    """Run the commands at once, as the operator would, with the CI hook secret set."""
    env = clean_environ()
    env[CI_ENV] = SECRET
    procs = [
        (
            args,
            subprocess.Popen(
                cli_argv(*args, kb=kb, state=state),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ),
        )
        for args in commands
    ]
    done = []
    for args, proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return done


def test_bad_cli_input_is_one_line_exit_1_and_changes_nothing(
    sample_kb: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    Service.open(sample_kb, None, state).close()  # the database exists before the bad calls
    files = tmp_path / "in"
    files.mkdir()
    (files / "ok.json").write_text('{"ok": true}')
    (files / "bad.json").write_text('{"ok": tru')
    (files / "big.json").write_bytes(b'{"x": "' + b"a" * (1024 * 1024) + b'"}')
    ok = str(files / "ok.json")
    commands: list[tuple[str, ...]] = [
        ("event", "emit", "ci", "--data", str(files / "missing.json"), "--local"),
        ("event", "emit", "ci", "--data", str(files / "bad.json"), "--local"),
        ("event", "emit", "ci", "--data", str(files / "big.json"), "--local"),
        ("event", "emit", "ci", "--data", ok, "--local", "--delivery", "has space"),
        ("event", "emit", "../ci", "--data", ok, "--local"),
        ("event", "emit", "ci", "--data", ok),
        ("event", "emit", "ci", "--data", ok, "--url", "file:///etc/passwd"),
        ("event", "emit", "ci", "--data", ok, "--port", "1"),
        ("goal", "show", "../../etc"),
    ]
    with _Open(sample_kb, state) as service:
        rows = row_counts(service)
    tree = tree_snapshot(sample_kb)
    for result in run_all(sample_kb, state, commands):
        where = " ".join(result.args)
        assert result.returncode == 1, (where, result.stdout, result.stderr)
        assert result.stdout == "", where
        assert result.stderr.startswith("goalsui: error: "), (where, result.stderr)
        assert result.stderr.count("\n") == 1, (where, result.stderr)
        assert "Traceback" not in result.stderr and SECRET not in result.stderr
    assert tree_snapshot(sample_kb) == tree
    with _Open(sample_kb, state) as service:
        assert row_counts(service) == rows


def test_a_broken_config_names_file_and_line_on_the_command_line(
    sample_kb: Path, tmp_path: Path
) -> None:
    config = sample_kb / "goalsui.yaml"
    config.write_text("hooks:\n  sources:\n    ci: {secret_env: [oops]}\n")
    (tmp_path / "ok.json").write_text("{}")
    [result] = run_all(
        sample_kb,
        tmp_path / "state",
        [("event", "emit", "ci", "--data", str(tmp_path / "ok.json"), "--port", "1")],
    )
    assert result.returncode == 1
    assert (
        result.stderr == "goalsui: error: goalsui.yaml:3: 'secret_env' must be text, found list\n"
    )
    assert config.read_text() == "hooks:\n  sources:\n    ci: {secret_env: [oops]}\n"


class _Open:
    def __init__(self, kb: Path, state: Path) -> None:
        self.service = Service.open(kb, None, state, sync=False)

    def __enter__(self) -> Service:
        return self.service

    def __exit__(self, *exc: object) -> None:
        self.service.close()


@pytest.fixture(autouse=True)
def _no_ambient_goalsui_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("GOALSUI_"):
            monkeypatch.delenv(name)
