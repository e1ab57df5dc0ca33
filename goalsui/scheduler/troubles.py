"""A scheduler that cannot do its work keeps running, degraded, and says so.

A part whose step fails is *in trouble* until its next step succeeds: the failure is
logged (repeats at most once a minute, with a count), ``/readyz`` answers 503 with the
reason, and the part retries with a back-off (:func:`retry_delay`) until the database
and the disk accept writes again (see docs/operations.md, "A full disk").
"""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from goalsui.scheduler.tuning import RETRY_MAX

#: log a repeated failure of one part at most this often (seconds)
REPEAT_LOG_EVERY = 60.0

#: SQLite's primary result codes SQLITE_FULL, SQLITE_READONLY and SQLITE_IOERR
_SQLITE_WORDS = {
    13: "the database or its disk is full",
    8: "the database is read-only",
    10: "a disk I/O error",
}
_OS_WORDS = {
    errno.ENOSPC: "no space left on the disk",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EIO: "a disk I/O error",
}
_PG_WORDS = {
    "53100": "the database server's disk is full",
    "53200": "the database server is out of memory",
    "25006": "the database is read-only",
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the DBAPI error SQLAlchemy wraps (``orig``), their causes and contexts."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        orig = getattr(e, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None, e.__cause__, e.__context__]


def cannot_write(exc: BaseException) -> str | None:
    """Why nothing can be written, in words (a full disk or database, a read-only file
    system or database, an I/O error), when ``exc`` says so; else None."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in _OS_WORDS:
            return _OS_WORDS[e.errno]
        if isinstance(e, sqlite3.Error):
            code = getattr(e, "sqlite_errorcode", None)
            if isinstance(code, int) and code & 0xFF in _SQLITE_WORDS:
                return _SQLITE_WORDS[code & 0xFF]
            if "database or disk is full" in str(e):
                return "the database or its disk is full"
        state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
        if isinstance(state, str) and state in _PG_WORDS:
            return _PG_WORDS[state]
    return None


def retry_delay(attempts: int, base: float) -> float:
    """Seconds before retry number ``attempts`` (1, 2, ...): ``base`` doubled each time,
    at most ``RETRY_MAX``."""
    return float(min(RETRY_MAX, max(base, 0.05) * 2 ** max(attempts - 1, 0)))


@dataclass
class Trouble:
    """One part's failing streak: what failed last, since when, how many times."""

    message: str
    since: float = field(default_factory=time.time)  # wall clock of the first failure
    attempts: int = 1
    held: int = 0  # failures not logged since the last line
    next_log: float = 0.0  # time.monotonic() before which repeats are only counted

    def text(self) -> str:
        """One line for ``/readyz`` and the console."""
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        tries = f"{self.attempts} failed attempt{'s' if self.attempts != 1 else ''}"
        return f"{self.message} ({tries} since {since}; retrying)"
