"""Open KB files only when regular, never blocking: ``stat``, ``O_NONBLOCK`` open, ``fstat`` before
a byte is read (a FIFO would block for ever)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from goalsui.errors import KBError

#: the most a YAML file (or another small text file) of the KB may hold
MAX_YAML_BYTES = 256 * 1024

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_mode(mode: int) -> str:
    """What a file of this ``st_mode`` is, for a message ("a FIFO (named pipe)")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _not_regular(shown: str, mode: int) -> KBError:
    return KBError(shown, f"not a regular file: {describe_mode(mode)}; goalsui reads only files")


def open_regular(path: Path | str, display: str | None = None) -> int:
    """A read-only descriptor of ``path``, which must be a regular file (KBError if not)."""
    shown = display or str(path)
    try:
        before = os.stat(path)
        if not stat.S_ISREG(before.st_mode):
            raise _not_regular(shown, before.st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise KBError(shown, "file is missing") from None
    except OSError as exc:
        raise KBError(shown, f"cannot read: {exc.strerror}") from None
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):  # swapped between the check and the open
            raise _not_regular(shown, after.st_mode)
        os.set_blocking(fd, True)  # a regular file: plain reads from here on
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str, limit: int, shown: str) -> bytes:
    """The bytes of the regular file ``path``; more than ``limit`` bytes is a KBError."""
    fd = open_regular(path, shown)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise KBError(shown, f"file is too large ({size} bytes, limit {limit})")
        with os.fdopen(fd, "rb", closefd=False) as fh:  # reads until limit + 1 bytes or EOF
            data = fh.read(limit + 1)
    except OSError as exc:
        raise KBError(shown, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise KBError(shown, f"file is too large (over {limit} bytes)")
    return data


def read_text(path: Path, *, limit: int = MAX_YAML_BYTES, display: str) -> str:
    """Read a regular UTF-8 text file; huge, binary or non-UTF-8 content is a KBError."""
    data = read_regular(path, limit, display)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KBError(display, "file is not valid UTF-8", line) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise KBError(display, "file is binary (it contains a NUL byte), not text", line)
    return text
