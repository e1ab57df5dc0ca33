"""``goalsui serve``: a browser tab gets a watch-only console; one scheduler beside them."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from goalsui.cli.serve import LOCK_NAME, acquire_lock
from tests.base_kit import cli_popen

REPO = Path(__file__).resolve().parent.parent.parent
ANSI = re.compile(r"\x1b(\[[0-9;?$]*[A-Za-z]|\][^\x07\x1b]*(\x07|\x1b\\)|[=>])")

pytestmark = pytest.mark.slow
TOKEN = "test-serve-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(kb: Path, state: Path, port: int) -> subprocess.Popen[str]:
    return cli_popen(
        "serve", "--port", port, kb=kb, state=state,
        extra_env={"GOALSUI_SERVE_TOKEN": TOKEN},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    out, _ = process.communicate(timeout=40)
    return out


async def first_screen(port: int) -> bytes:
    """Open a tab the way the page does (a websocket) and read the console's first screen."""
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(f"http://127.0.0.1:{port}/?token={TOKEN}") as response:
                    assert response.status == 200
                    break
            except aiohttp.ClientConnectionError:
                assert time.monotonic() < deadline, "serve did not answer"
                await asyncio.sleep(0.1)
        got = b""
        async with session.ws_connect(
            f"http://127.0.0.1:{port}/ws?width=120&height=36&token={TOKEN}"
        ) as ws:
            while "watching" not in ANSI.sub("", got.decode("utf-8", "replace")):
                assert time.monotonic() < deadline, got[-300:]
                try:
                    message = await asyncio.wait_for(ws.receive(), 5)
                except TimeoutError:
                    continue
                if message.type == aiohttp.WSMsgType.BINARY:
                    got += message.data
                elif message.type == aiohttp.WSMsgType.TEXT:
                    got += message.data.encode()
                else:
                    break
        return got


def test_serve_runs_watch_only_consoles_and_one_daemon(tmp_path: Path) -> None:
    kb, state = tmp_path / "kb", tmp_path / "state"
    shutil.copytree(REPO / "sample_kb", kb)
    port, port2 = free_port(), free_port()
    first = start_serve(kb, state, port)
    second = None
    try:
        screen = ANSI.sub("", asyncio.run(first_screen(port)).decode("utf-8", "replace"))
        assert "scheduler off (watching)" in screen  # a served console never runs the scheduler
        # the daemon holds the lock: another process cannot take it
        deadline = time.monotonic() + 20
        while (handle := acquire_lock(state / LOCK_NAME)) is not None:
            handle.close()
            assert time.monotonic() < deadline, "serve did not start its scheduler"
            time.sleep(0.1)
        second = start_serve(kb, state, port2)
        asyncio.run(first_screen(port2))
        out2 = stop(second)
        assert "already runs beside another 'goalsui serve'" in out2
    finally:
        out = stop(first)
        if second is not None and second.poll() is None:
            stop(second)
    assert "scheduler running (goalsui daemon" in out
    # stopping serve stops its daemon: the lock is free again
    handle = acquire_lock(state / LOCK_NAME)
    assert handle is not None
    handle.close()
    log = (state / "serve-daemon.log").read_text()
    assert "stopped" in log
