"""The wake file: how a process that changed a SQLite database tells the others at once.

PostgreSQL carries change notifications itself (:mod:`goalsui.store.notify`). SQLite
has nothing of the kind, so every committed change made through the service also rings
the bells in a folder beside the database file (``<db>-wake/``, see
:mod:`goalsui.store.doorbell`) and rewrites a small file there (``<db>-wake/wake``) with
the writer's origin as its content, for listeners that watch it with ``watchfiles``
where a bell cannot be bound (see docs/architecture.md, "Waking").
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sqlalchemy.engine import Engine

from goalsui.store import doorbell

log = logging.getLogger(__name__)

FILE_NAME = "wake"


def wake_dir(engine: Engine) -> Path | None:
    """The folder of the wake file of a SQLite database file (None: not a file database)."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    db = Path(database).resolve()
    return db.with_name(db.name + "-wake")


def touch(engine: Engine, origin: str) -> bool:
    """Ring the bells in the wake folder and rewrite the wake file with ``origin`` (never
    raises: a lost wake only delays readers until their next poll); returns whether the
    file was written."""
    folder = wake_dir(engine)
    if folder is None:
        return False
    doorbell.ring(folder, origin)
    path = folder / FILE_NAME
    data = origin.encode("utf-8", "replace")[:200]
    try:
        _write(path, data)
    except FileNotFoundError:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write(path, data)
        except OSError as exc:
            log.debug("cannot write the wake file %s: %s", path, exc)
            return False
    except OSError as exc:
        log.debug("cannot write the wake file %s: %s", path, exc)
        return False
    return True


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_origin(folder: Path) -> str:
    """The origin of the last writer ('' when unreadable)."""
    try:
        return (folder / FILE_NAME).read_bytes()[:200].decode("utf-8", "replace")
    except OSError:
        return ""
