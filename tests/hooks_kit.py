"""Helpers shared by the hook, secret and bad-input tests (this module holds no tests).

- :class:`ThreadedListener` serves the real hook listener on 127.0.0.1 from a background
  event loop, so synchronous tests (hypothesis, subprocesses) can send real HTTP to it;
- :func:`post` / :func:`raw_request` send real HTTP requests;
- :func:`tree_snapshot` and :func:`row_counts` prove that nothing changed on disk or in
  the database after a refusal.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlmodel import SQLModel

from goalsui.hooks import signing
from goalsui.hooks.server import Listener, start_listener

SECRET = "hooks-test-secret-7f3a9c1e5b"
OTHER_SECRET = "hooks-test-other-secret-0d2e"
CI_ENV = "GOALSUI_HOOK_CI_SECRET"
GITHUB_ENV = "GOALSUI_HOOK_GITHUB_SECRET"


class ThreadedListener:
    """The real listener, running in its own event loop thread (a context manager)."""

    def __init__(self, service: Any, **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        future = asyncio.run_coroutine_threadsafe(start_listener(service, **kwargs), self.loop)
        self.listener: Listener = future.result(timeout=30)
        self.port = self.listener.port

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.listener.close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()

    def __enter__(self) -> ThreadedListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def post(
    port: int, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """One real HTTP POST to 127.0.0.1; returns the status and the decoded JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        answer = json.loads(raw) if raw else {}
    except ValueError:
        answer = {"_raw": raw.decode("utf-8", "replace")}
    return response.status, answer


def signed(
    body: bytes,
    delivery: str,
    *,
    secret: str = SECRET,
    style: str = "goalsui",
    timestamp: int | None = None,
) -> dict[str, str]:
    return signing.signed_headers(secret, body, delivery, style=style, timestamp=timestamp)


def raw_request(port: int, data: bytes, *, half_close: bool = True) -> bytes:
    """Send raw bytes on a TCP connection and return whatever the server answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def tree_snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with a digest of its content (or link target)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def row_counts(service: Any) -> dict[str, int]:
    """The number of rows in every table of the service's database."""
    with service.store.read() as s:
        return {
            table.name: s.execute(select(func.count()).select_from(table)).scalar_one()
            for table in SQLModel.metadata.sorted_tables
        }


def db_text(service: Any) -> str:
    """Every value of every row of every table, as text (for secret scans)."""
    parts: list[str] = []
    with service.store.read() as s:
        for table in SQLModel.metadata.sorted_tables:
            for row in s.execute(select(table)).all():
                parts.extend(str(value) for value in row)
    return "\n".join(parts)
