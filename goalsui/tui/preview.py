"""The console's first frame, before the service is open: the records of a SQLite database
read with the standard library, else the KB's goal tree (no database stack either way)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from goalsui.kb.quick import read_goals
from goalsui.tui.model import RECENT_SPAN, Dashboard, ThreadView


def preview_dashboard(root: Path, now: datetime, records: Path | None = None) -> Dashboard:
    """The records of the SQLite file ``records`` if they can be read without the database
    stack, else the KB's goal tree only, marked as a preview."""
    if records is not None:
        early = early_dashboard(records, now)
        if early is not None:
            return early
    return Dashboard(at=now, goals=read_goals(Path(root)), preview=True)


def early_dashboard(path: Path, now: datetime, kb_root: Path | None = None) -> Dashboard | None:
    """The records of the SQLite file at ``path``, read without the database stack (None:
    they cannot be); with ``kb_root``, the goals' budget lines too."""
    from goalsui.service.quick import read_records

    quick = read_records(path, now, RECENT_SPAN, kb_root)
    if quick is None:
        return None
    threads = [ThreadView(thread, todos) for thread, todos in quick.threads]
    return Dashboard(at=now, early=True, **(vars(quick) | {"threads": threads}))


def read_in_background(
    root: Path, now: datetime, records: Path | None = None
) -> Callable[[], Dashboard]:
    """Start :func:`preview_dashboard` in a thread (its file system calls overlap the
    console's imports); the returned function waits for it."""
    result: list[Dashboard] = []

    def read() -> None:
        # on an error, the caller reads again (and sees the error)
        with contextlib.suppress(Exception):
            result.append(preview_dashboard(root, now, records))

    thread = threading.Thread(target=read, name="goalsui-preview", daemon=True)
    thread.start()

    def wait() -> Dashboard:
        thread.join()
        return result[0] if result else preview_dashboard(root, now)  # the KB alone

    return wait
