"""Log output of the daemon: plain lines (default) or one JSON object per line. ``--log-format
json``: one object a line (``ts``, ``level``, ``logger``, ``message``, extra fields), sanitised."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from typing import Any, TextIO

from goalsui.domain.untrusted import plain


def _stamp() -> str:
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created)
            .astimezone()
            .isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": plain(record.getMessage(), limit=4000),
        }
        if record.exc_info:
            data["error"] = plain(self.formatException(record.exc_info), limit=8000)
        return json.dumps(data, ensure_ascii=False)


class LineWriter:
    """Writes the daemon's own lines as text (``stamp message``) or as JSON objects."""

    def __init__(self, fmt: str = "text", out: TextIO | None = None, err: TextIO | None = None):
        self.fmt = fmt
        self.out = out
        self.err = err

    def __call__(self, text: str, *, err: bool = False, **fields: Any) -> None:
        stream = (self.err or sys.stderr) if err else (self.out or sys.stdout)
        if self.fmt == "json":
            data: dict[str, Any] = {
                "ts": _stamp(),
                "level": "error" if err else "info",
                "logger": "goalsui.daemon",
                "message": plain(text, limit=4000),
            }
            data.update({k: v for k, v in fields.items() if v is not None})
            line = json.dumps(data, ensure_ascii=False)
        else:
            stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S%z")
            line = f"{stamp} {text}"
        stream.write(line + "\n")
        stream.flush()


def configure(fmt: str) -> LineWriter:
    """JSON: records (warning and up) to stderr; returns the writer of the daemon's lines."""
    if fmt != "json":
        return LineWriter(fmt)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("goalsui")
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    root.propagate = False
    return LineWriter(fmt)
