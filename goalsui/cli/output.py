"""Everything the command line prints for people goes through one sanitiser: :func:`guard_streams`
passes every write to ``sys.stdout``/``sys.stderr`` through :func:`goalsui.domain.untrusted.plain`, so
agent output, messages, KB fields and errors never send escape sequences, OSC or C1 controls or bidi
overrides to the terminal. JSON output (:func:`json_text`) escapes the same characters as ``\\uXXXX``."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from goalsui.domain.untrusted import json_escape, plain


class SafeStream(io.TextIOBase):
    """A text stream that writes ``plain(text)`` to the stream it wraps."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(plain(text) if text else text)
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares an attribute
        return getattr(self.raw, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


@contextmanager
def guard_streams() -> Iterator[None]:
    """Sanitise ``sys.stdout`` and ``sys.stderr`` for the duration (nested use is fine)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)
    try:
        yield
    finally:
        flushes: list[Callable[[], None]] = [sys.stdout.flush, sys.stderr.flush]
        for flush in flushes:
            with suppress(OSError, ValueError):  # a closed pipe: nothing more to say
                flush()
        sys.stdout, sys.stderr = saved


def json_text(data: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``data`` as indented JSON with controls, C1 and bidi characters as ``\\uXXXX``."""
    return json_escape(json.dumps(data, indent=2, default=default, ensure_ascii=False))
