"""Which schedulers serve a KB: ``<state dir>/schedulers/<pid>.json`` per live process.

Its writer holds an exclusive ``flock`` for life; a reader's shared lock is refused while
the process is alive and granted once it died (the kernel frees a dead process's lock)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from goalsui.service.context import Aggregate

FOLDER = "schedulers"


@dataclass(frozen=True)
class SchedulerInfo:
    """A live scheduler process serving a KB."""

    pid: int
    host: str
    kind: str  # daemon | console
    kb: str
    owner: str = ""
    started: str = ""

    def describe(self) -> str:
        """``daemon pid 4242`` (with the host when it is another machine's)."""
        here = self.host == socket.gethostname()[:80]
        return f"{self.kind} pid {self.pid}" + ("" if here else f" on {self.host}")


class SchedulerRegistration:
    """The open, locked registration file of this process; :meth:`close` removes it."""

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path = path
        self._handle: IO[str] | None = handle

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        handle.close()  # releases the lock


class Schedulers(Aggregate):
    """The scheduler processes registered for one KB (in its state folder)."""

    def register(self, kind: str, owner: str = "") -> SchedulerRegistration:
        """Register this process as a live scheduler of the KB until closed or dead."""
        folder = self.ctx.state_dir / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{os.getpid()}.json"
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held open: the lock lives with it
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            handle.seek(0)
            handle.truncate()
            started = self.ctx.now().isoformat(timespec="seconds")
            host, kb = socket.gethostname()[:80], str(self.ctx.kb.root)
            record = SchedulerInfo(os.getpid(), host, kind, kb, owner, started)
            handle.write(json.dumps(asdict(record)) + "\n")
            handle.flush()
        except BaseException:
            handle.close()
            raise
        return SchedulerRegistration(path, handle)

    def live(self) -> list[SchedulerInfo]:
        """The live schedulers registered for the KB (other processes and this one)."""
        folder = self.ctx.state_dir / FOLDER
        if not folder.is_dir():
            return []
        found = [_read_live(path) for path in sorted(folder.glob("*.json"))]
        return [i for i in found if i is not None and Path(i.kb) == self.ctx.kb.root]


def _read_live(path: Path) -> SchedulerInfo | None:
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: the process is alive
        except OSError:
            return None
        else:
            return None  # nobody holds it: a leftover of a process that died
        try:
            data: dict[str, Any] = json.loads(handle.read() or "{}")
            text = {key: str(data.get(key, "")) for key in ("host", "kb", "owner", "started")}
            return SchedulerInfo(int(data["pid"]), kind=str(data.get("kind", "scheduler")), **text)
        except (ValueError, KeyError, TypeError):
            return None
