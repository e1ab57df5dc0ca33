"""A runner's process lives no longer than the scheduler that started it. The signal comes when the
*thread* that forked the child ends, so runners start from the event loop's long-lived thread."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from functools import cache

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, loaded once in the parent (never between fork and exec)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def _setup(*calls: tuple[int, int]) -> Callable[[], None] | None:
    """A ``preexec_fn`` making the ``prctl`` calls, then exiting at once if the parent is gone."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def setup() -> None:
        for option, value in calls:
            prctl(option, value, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)

    return setup


def child_setup() -> Callable[[], None] | None:
    """The ``preexec_fn`` that kills the child with its parent (SIGKILL)."""
    return _setup((_PR_SET_PDEATHSIG, int(signal.SIGKILL)))


def supervisor_setup() -> Callable[[], None] | None:
    """The supervisor's ``preexec_fn``: child subreaper, SIGUSR1 when the parent dies."""
    return _setup((_PR_SET_CHILD_SUBREAPER, 1), (_PR_SET_PDEATHSIG, int(signal.SIGUSR1)))
