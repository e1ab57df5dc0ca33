"""Doorbells: how a process that changed a SQLite database wakes the others at no idle cost.

A listener binds a Unix datagram socket (a *bell*) in ``<db>-wake/``; a writer sends its
origin to every bell after a commit (:func:`ring`), removing those whose process died.
Where no bell can be bound the scheduler polls. See docs/architecture.md, "Waking"."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
from pathlib import Path

from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

SUFFIX = ".bell"
#: AF_UNIX paths longer than this cannot be bound or addressed directly (108 with the NUL)
MAX_PATH = 100
ORIGIN_BYTES = 200


def wake_dir(engine: Engine) -> Path | None:
    """The wake folder of a SQLite database file (None: not a file database)."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    db = Path(database).resolve()
    return db.with_name(db.name + "-wake")


def _address(folder_fd: int | None, path: Path) -> str:
    """An address short enough for AF_UNIX: the path itself, or (Linux) the path under
    the folder's descriptor in ``/proc/self/fd``."""
    text = str(path)
    if len(text.encode()) <= MAX_PATH or folder_fd is None:
        return text
    return f"/proc/self/fd/{folder_fd}/{path.name}"


def _open_folder(folder: Path) -> int | None:
    if len(str(folder).encode()) + 40 <= MAX_PATH or not Path("/proc/self/fd").is_dir():
        return None
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY)


class Bell:
    """This process's bell in one wake folder: a non-blocking datagram socket."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
        self.sock: socket.socket | None = None

    def open(self) -> socket.socket:
        """Bind the bell (raises OSError when it cannot be: the caller falls back)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        folder_fd = None
        try:
            folder_fd = _open_folder(self.folder)
            address = _address(folder_fd, self.path)
            sock.bind(address)
            os.chmod(address, 0o600)  # the bell is the owner's alone
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        finally:
            if folder_fd is not None:
                os.close(folder_fd)
        self.sock = sock
        return sock

    def origins(self) -> list[str]:
        """The origins of the datagrams waiting (never blocks)."""
        found: list[str] = []
        sock = self.sock
        while sock is not None:
            try:
                data = sock.recv(ORIGIN_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                log.debug("reading the bell %s: %s", self.path, exc)
                break
            found.append(data.decode("utf-8", "replace"))
        return found

    def close(self) -> None:
        """Unbind and remove the bell (idempotent)."""
        sock, self.sock = self.sock, None
        if sock is None:
            return
        sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def ring(folder: Path, origin: str) -> int:
    """Send ``origin`` to every bell in ``folder``; remove bells nobody holds any more.
    Never raises (a lost ring only delays a listener until its next look); returns how
    many bells took it."""
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith(SUFFIX)]
    except OSError:
        return 0
    if not names:
        return 0
    data = origin.encode("utf-8", "replace")[:ORIGIN_BYTES]
    rung = 0
    folder_fd = None
    try:
        folder_fd = _open_folder(folder)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            for name in names:
                try:
                    sock.sendto(data, _address(folder_fd, folder / name))
                except ConnectionRefusedError:  # its process is gone: the bell is stale
                    with contextlib.suppress(OSError):
                        (folder / name).unlink()
                    continue
                except BlockingIOError:  # its queue is full: it has wakes waiting already
                    pass
                except OSError:  # gone meanwhile, or not ours to ring
                    continue
                rung += 1
    except OSError as exc:
        log.debug("ringing the bells in %s: %s", folder, exc)
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    return rung
