"""Every file or stdin input is read with a size bound (``@/dev/zero`` is one line on stderr), from
regular files, pipes and terminals only."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from goalsui.errors import ValidationError

#: the largest text an @FILE or stdin input may hold (the KB's own file limit)
MAX_INPUT_BYTES = 2 * 1024 * 1024


def _read_stdin(limit: int) -> bytes:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream stand-in (tests): count characters as bytes
        return str(sys.stdin.read(limit + 1)).encode("utf-8")
    return bytes(buffer.read(limit + 1))


def _read_file(path: Path, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ValidationError(f"cannot read {path}: it is a folder")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise ValidationError(f"cannot read {path}: not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:  # reads until limit + 1 bytes or EOF
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def read_input_bytes(value: str, *, limit: int = MAX_INPUT_BYTES, what: str = "input") -> bytes:
    """The bytes of ``-`` (stdin) or a file path, at most ``limit`` of them."""
    shown = "stdin" if value == "-" else value
    try:
        data = _read_stdin(limit) if value == "-" else _read_file(Path(value), limit)
    except OSError as exc:
        raise ValidationError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValidationError(f"{shown}: the {what} is larger than {limit / 2**20:g} MiB")
    return data


def read_input_text(value: str) -> str:
    """``-`` or a file path as UTF-8 text (newlines as in text mode), bounded."""
    data = read_input_bytes(value, what="text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = "stdin" if value == "-" else value
        raise ValidationError(f"cannot read {shown}: not UTF-8 text ({exc.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
