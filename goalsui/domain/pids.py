"""Whether a process id is alive, by the signal-0 probe."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists (another user's process counts); False for pid <= 0."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:  # ProcessLookupError and the rest
        return False
    return True
