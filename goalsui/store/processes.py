"""The process groups of runs on this host: is one still alive, and ending it.

A dead scheduler's runs are retried only after their group is gone, so the same job never
runs twice at once; on Linux all-zombie groups count as dead (``/proc``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from datetime import datetime
from pathlib import Path

from goalsui.domain.pids import pid_alive

PROC = Path("/proc")
#: Seconds between SIGTERM and SIGKILL, and how long to wait for the group to go after.
TERM_GRACE = 3.0
KILL_WAIT = 2.0
_POLL = 0.05
#: A run's runner starts milliseconds after its run row is written: a leader started
#: outside this window is not its (early slack: boot time and clock ticks are coarse).
EARLY = 5.0
LATE = 15 * 60.0


def _stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command (state first); OSError if unreadable."""
    text = (PROC / str(pid) / "stat").read_text()
    return text[text.rfind(")") + 2 :].split()


def this_host() -> str:
    """The name recorded on runs started here."""
    return socket.gethostname()


def owner_alive_here(owner: str | None, *, me: str, host: str) -> bool:
    """Whether the scheduler ``owner`` (``host:pid:nonce``) still lives on this host.

    A lapsed lease of a live owner means a slow scheduler: recovering its runs would run
    them twice. Another nonce of this process has stopped; another host cannot be checked."""
    if not owner:
        return False
    if owner == me:
        return True
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or parts[0] != host[:40]:
        return False
    pid = int(parts[1])
    if pid <= 1 or pid == os.getpid():
        return False
    try:
        return _stat(pid)[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return pid_alive(pid)


def _members(pgid: int) -> list[tuple[int, str, int]] | None:
    """``(pid, state, starttime)`` of each process in group ``pgid``; None without /proc."""
    if not (PROC / "self" / "stat").exists():
        return None
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(entry.name)
        except OSError:
            continue  # it ended while we looked
        # fields[0] is the state, [2] the process group, [19] the start time (ticks)
        if len(fields) > 19 and int(fields[2]) == pgid:
            found.append((int(entry.name), fields[0], int(fields[19])))
    return found


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie."""
    if pgid <= 1:
        return False
    members = _members(pgid)
    if members is not None:
        return any(state != "Z" for _, state, _ in members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is not ours to signal
    return True


def group_is_the_runs(pgid: int, started_at: datetime | None) -> bool:
    """False when the group's leader started too early or late to be the run's runner
    (a reused pid); True when it cannot tell."""
    if started_at is None:
        return True
    try:
        ticks = int(_stat(pgid)[19])
        boot = next(
            int(line.split()[1])
            for line in (PROC / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError):
        return True  # no leader (or no /proc): the members alone say it
    lag = boot + ticks / os.sysconf("SC_CLK_TCK") - started_at.timestamp()
    return -EARLY <= lag <= LATE


def _signal(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _wait_gone(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


def kill_group(pgid: int, *, grace: float = TERM_GRACE, wait: float = KILL_WAIT) -> bool:
    """SIGTERM group ``pgid``, then SIGKILL after ``grace`` s; False if a member survived
    (the caller must not start the run again)."""
    if not group_alive(pgid):
        return True
    _signal(pgid, signal.SIGTERM)
    if _wait_gone(pgid, grace):
        return True
    _signal(pgid, signal.SIGKILL)
    return _wait_gone(pgid, wait)
