"""What every tier of the suite shares: where things are, a fake clock, the CLI in a process.

Importable from any test as ``tests.base_kit`` (tests/ and each tier are packages, and
``pythonpath`` in pyproject.toml puts the repository root on ``sys.path``); fixtures live in
the ``conftest.py`` modules, helpers never do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SCRIPTS = TESTS / "scripts"

NO_PG = "no PostgreSQL server available (set GOALSUI_TEST_PG_URL or install postgresql)"


class FakeClock:
    """An injectable clock: ``clock()`` returns the current fake instant (aware UTC)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0, **kwargs: float) -> datetime:
        self.now = self.now + timedelta(seconds=seconds, **kwargs)
        return self.now

    def set(self, when: datetime) -> datetime:
        self.now = when
        return self.now


def clean_environ() -> dict[str, str]:
    """This environment without any GOALSUI_* variable (the CLI then uses only its flags)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GOALSUI_")}


def cli_argv(
    *args: object,
    kb: Path | str | None = None,
    state: Path | str | None = None,
    db: str | None = None,
) -> list[str]:
    """``python -m goalsui [--kb KB] [--state-dir STATE] [--db DB] ARGS...``."""
    argv = [sys.executable, "-m", "goalsui"]
    if kb is not None:
        argv += ["--kb", str(kb)]
    if state is not None:
        argv += ["--state-dir", str(state)]
    if db is not None:
        argv += ["--db", db]
    return argv + [str(a) for a in args]


def _environ(env: Mapping[str, str] | None, extra_env: Mapping[str, str] | None) -> dict[str, str]:
    environ = dict(os.environ if env is None else env)
    environ.update(extra_env or {})
    return environ


def run_cli(
    *args: object,
    kb: Path | str | None = None,
    state: Path | str | None = None,
    db: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    input: str | None = None,
    cwd: Path | str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a new process and return what it did (never raises on exit 1).

    ``env`` replaces the environment (default: this one); ``extra_env`` adds to it.
    """
    return subprocess.run(
        cli_argv(*args, kb=kb, state=state, db=db),
        env=_environ(env, extra_env),
        input=input,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_popen(
    *args: object,
    kb: Path | str | None = None,
    state: Path | str | None = None,
    db: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen[str]:
    """Start the real CLI in a new process (text mode) and return it, still running.

    ``env`` and ``extra_env`` as for :func:`run_cli`; ``popen``: more ``subprocess.Popen``
    arguments (``stdout=subprocess.PIPE``, ``start_new_session=True``, ...).
    """
    return subprocess.Popen(
        cli_argv(*args, kb=kb, state=state, db=db),
        env=_environ(env, extra_env),
        text=True,
        **popen,
    )
