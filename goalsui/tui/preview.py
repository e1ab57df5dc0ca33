"""The console's first frame: the KB's goal tree from a quick read of its folders
(:mod:`goalsui.kb.quick`), before the database is open.

Nothing here imports the service or the database stack: the console paints this
preview at once and replaces it with the records as soon as they are loaded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from goalsui.kb.quick import read_goals
from goalsui.tui.model import Dashboard


def preview_dashboard(root: Path, now: datetime) -> Dashboard:
    """A dashboard with the KB's goal tree only, marked as a preview."""
    goals = read_goals(Path(root))
    return Dashboard(
        at=now,
        goals=goals,
        intents={},
        running={},
        recent={},
        attention=[],
        disabled=[],
        threads=[],
        summary={},
        preview=True,
    )


def read_in_background(root: Path, now: datetime) -> Callable[[], Dashboard]:
    """Start :func:`preview_dashboard` in a thread (its file system calls overlap the
    console's imports); the returned function waits for it."""
    result: list[Dashboard] = []

    def read() -> None:
        # on an error, the caller reads again (and sees the error)
        with contextlib.suppress(Exception):
            result.append(preview_dashboard(root, now))

    thread = threading.Thread(target=read, name="goalsui-preview", daemon=True)
    thread.start()

    def wait() -> Dashboard:
        thread.join()
        return result[0] if result else preview_dashboard(root, now)

    return wait


def peak_rss_kb() -> int:
    """This process's peak resident set (``VmHWM`` in ``/proc/self/status``), in KiB.

    Not ``ru_maxrss``: that survives ``exec``, so a child started by a big parent reports
    the parent's peak. Falls back to it where there is no ``/proc``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
