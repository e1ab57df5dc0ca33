"""Helpers for tests that run real ``goalsui daemon`` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from goalsui.domain.states import ChangeTopic
from goalsui.domain.timeutil import utcnow
from goalsui.service import Service
from tests.base_kit import cli_argv
from tests.contract.test_scheduler_claims import bulk_at


def add_due_now(svc: Service, n: int) -> list[int]:
    """``n`` one-shot intents due now, written straight to the database, then announced
    as every goalsui writer announces (the doorbells, or NOTIFY): idle daemons sleep
    until a change or their 30 s cap, they do not poll."""
    ids = bulk_at(svc, n, utcnow())
    svc.changed(ChangeTopic.INTENTS)
    return ids


class Daemon:
    """A ``goalsui daemon`` subprocess whose output lines are collected as they come.

    ``db``: a database URL (default: the SQLite file in the state dir); ``options``:
    daemon options after the defaults (argparse keeps the last value of a repeated one).
    """

    def __init__(self, kb: Path, state: Path, *options: str, db: str | None = None) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        head = cli_argv(kb=kb, state=state)
        if db is not None:
            head += ["--db", db]
        self.proc = subprocess.Popen(
            [
                *head,
                "daemon",
                "--no-watch",
                "--lease-seconds",
                "1",
                "--poll-interval",
                "0.2",
                *options,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 45.0) -> None:
        wait_until(
            lambda: (
                any("goalsui daemon:" in line for line in self.lines)
                or self.proc.poll() is not None
            ),
            timeout,
        )
        assert self.proc.poll() is None, "\n".join(self.lines)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        """SIGKILL: the daemon gets no chance to record anything."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(5)


def wait_until(predicate: Callable[[], bool], timeout: float = 45.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(step)


def runner_config(kb: Path, argv: list[str], timeout: str = "60s") -> None:
    """The KB's default runner: the command ``argv``."""
    (kb / "goalsui.yaml").write_text(
        f"runner:\n  command: {json.dumps(argv)}\n  timeout: {timeout}\n"
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
