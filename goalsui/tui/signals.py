"""The console stops cleanly on SIGHUP (its terminal closed) and SIGTERM.

Without a handler either signal ends the process at once: the scheduler it hosts never
stops its runs (they die with it through ``PR_SET_PDEATHSIG``) and never records them,
so they stay ``running`` until another scheduler's lease recovery. With one, the
scheduler gives its runs their grace period (SIGTERM, then SIGKILL to each run's process
group) and records them ``interrupted``, as the daemon does on SIGTERM
(``goalsui/cli/daemon.py``). A second signal during that stop changes nothing.

SIGTERM quits as ``q`` does after "Quit anyway?". After SIGHUP the terminal is gone:
every write to it fails, and Textual's output thread would stall the shutdown (its
bounded queue fills while it cannot write). So the console's standard streams that were
the terminal are pointed at ``/dev/null``, the screen stops being drawn, and once the
runs are recorded the process ends without restoring a terminal that no longer exists
(see ``GoalsApp.hang_up``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["STOP_SIGNALS", "detach_terminal", "go_dark", "trap_stop_signals"]

#: the terminal hung up; the service manager (or ``goalsui serve``) asked to stop
STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)


def trap_stop_signals(
    loop: asyncio.AbstractEventLoop, on_stop: Callable[[int], None]
) -> Callable[[], None]:
    """Call ``on_stop(signum)`` on the loop for the first SIGHUP or SIGTERM; returns the
    undo (the default handlers come back)."""
    asked: list[int] = []

    def on_signal(signum: int) -> None:
        if not asked:
            asked.append(signum)
            on_stop(signum)

    installed: list[int] = []
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, int(sig))
            installed.append(sig)

    def undo() -> None:
        for sig in installed:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)

    return undo


def detach_terminal() -> list[int]:
    """Point each of fds 0, 1 and 2 that is a terminal at ``/dev/null``; returns them."""
    ttys = [fd for fd in (0, 1, 2) if _isatty(fd)]
    if not ttys:
        return []
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in ttys:
            os.dup2(null, fd)
    finally:
        os.close(null)
    return ttys


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def go_dark(driver: Any) -> None:
    """Draw nothing more: the streams go to ``/dev/null``, the driver writes nowhere."""
    with contextlib.suppress(OSError):
        detach_terminal()
    if driver is not None:
        setattr(driver, "write", lambda data: None)  # noqa: B010 - mute the dead screen
