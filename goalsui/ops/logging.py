"""Log output of the daemon: plain lines (default) or one JSON object per line. ``--log-format
json``: one object a line (``ts``, ``level``, ``logger``, ``message``, extra fields), sanitised."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from typing import Any

from goalsui.domain.untrusted import plain


def json_line(at: datetime, level: str, logger: str, message: str, **fields: Any) -> str:
    """One log line as a JSON object; the message sanitised, fields that are None left out."""
    data: dict[str, Any] = {"ts": at.astimezone().isoformat(timespec="milliseconds")}
    data |= {"level": level, "logger": logger, "message": plain(message, limit=4000)}
    data.update({k: v for k, v in fields.items() if v is not None})
    return json.dumps(data, ensure_ascii=False)


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info
        error = plain(self.formatException(exc), limit=8000) if exc else None
        at, level = datetime.fromtimestamp(record.created), record.levelname.lower()
        return json_line(at, level, record.name, record.getMessage(), error=error)


class LineWriter:
    """Writes the daemon's own lines as text (``stamp message``) or as JSON objects."""

    def __init__(self, fmt: str = "text") -> None:
        self.fmt = fmt

    def __call__(self, text: str, *, err: bool = False, **fields: Any) -> None:
        stream = sys.stderr if err else sys.stdout
        now = datetime.now().astimezone()
        if self.fmt == "json":
            line = json_line(now, "error" if err else "info", "goalsui.daemon", text, **fields)
        else:
            line = f"{now:%Y-%m-%d %H:%M:%S%z} {text}"
        stream.write(line + "\n")
        stream.flush()


def configure(fmt: str) -> LineWriter:
    """JSON: records (warning and up) to stderr; returns the writer of the daemon's lines."""
    if fmt == "json":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        root = logging.getLogger("goalsui")
        root.handlers[:] = [handler]
        root.setLevel(logging.WARNING)
        root.propagate = False
    return LineWriter(fmt)
