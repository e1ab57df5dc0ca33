"""The console stops cleanly on SIGHUP (its terminal closed) and SIGTERM.

Without a handler the process ends at once: the scheduler it hosts never stops its runs
nor records them (they stay ``running`` until another scheduler's lease recovery). With
one, the runs get their grace period and are recorded ``interrupted``. After SIGHUP every
write to the terminal fails and would stall Textual's output thread, so the streams that
were the terminal go to ``/dev/null`` and the process ends without restoring it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

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


def go_dark(driver: Any) -> None:
    """Draw nothing more: each of fds 0, 1 and 2 that is a terminal goes to ``/dev/null``,
    the driver writes nowhere."""
    ttys = [fd for fd in (0, 1, 2) if os.isatty(fd)]  # False for a closed fd, never raises
    with contextlib.suppress(OSError):
        if ttys:
            null = os.open(os.devnull, os.O_RDWR)
            try:
                for fd in ttys:
                    os.dup2(null, fd)
            finally:
                os.close(null)
    if driver is not None:
        setattr(driver, "write", lambda data: None)  # noqa: B010 - mute the dead screen
