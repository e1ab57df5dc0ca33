"""Benchmarks (``goalsui bench ...``): each figure is printed beside a reference measured
in the same run on the same machine, with the target it is held to."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def goalsui_argv(kb: Path, state: Path, *command: str, db: str | None = None) -> list[str]:
    """``python -m goalsui`` on ``kb`` with its state in ``state`` (and ``db``), then ``command``."""
    where = ["--kb", str(kb), "--state-dir", str(state), *(["--db", db] if db else [])]
    return [sys.executable, "-m", "goalsui", *where, *command]


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new temporary folder, removed with everything in it when the block ends."""
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as name:
        yield Path(name)
