"""``goalsui serve`` answers only requests that carry its token (issue 21.9).

A real ``goalsui serve`` process and real HTTP and websocket requests.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.base_kit import clean_environ, cli_argv
from tests.e2e.test_tui_serve import ANSI, REPO, free_port

pytestmark = pytest.mark.slow
TOKEN = "operator-chosen-token-42abcdef"


def serve(kb: Path, state: Path, port: int, *extra: str, token: str | None) -> subprocess.Popen:
    env = clean_environ()
    if token is not None:
        env["GOALSUI_SERVE_TOKEN"] = token
    return subprocess.Popen(
        cli_argv("serve", "--no-daemon", "--port", port, *extra, kb=kb, state=state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    out, _ = process.communicate(timeout=40)
    return out


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "sample_kb", tmp_path / "kb")
    return tmp_path / "kb"


async def status(session: aiohttp.ClientSession, url: str, **kw: Any) -> int:
    deadline = time.monotonic() + 30
    while True:
        try:
            async with session.get(url, allow_redirects=False, **kw) as response:
                await response.read()
                return response.status
        except aiohttp.ClientConnectionError:
            assert time.monotonic() < deadline, "serve did not answer"
            await asyncio.sleep(0.1)


async def probe(port: int, token: str) -> dict[str, object]:
    base = f"http://127.0.0.1:{port}"
    out: dict[str, object] = {}
    async with aiohttp.ClientSession() as session:
        out["none"] = await status(session, f"{base}/")
        out["wrong"] = await status(session, f"{base}/?token=wrong-{token}")
        out["static"] = await status(session, f"{base}/static/css/xterm.css")
        out["bearer"] = await status(
            session, f"{base}/", headers={"Authorization": f"Bearer {token}"}
        )
        async with session.get(f"{base}/?token={token}") as response:
            out["query"] = response.status
            out["cookie"] = response.cookies.get("goalsui_serve_token")
        try:
            async with session.ws_connect(f"{base}/ws?width=80&height=24"):
                out["ws_none"] = 101
        except aiohttp.WSServerHandshakeError as exc:
            out["ws_none"] = exc.status
        got = b""
        async with session.ws_connect(f"{base}/ws?width=120&height=36&token={token}") as ws:
            deadline = time.monotonic() + 60
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
        out["ws_token"] = "watching" in ANSI.sub("", got.decode("utf-8", "replace"))
    return out


def test_every_request_needs_the_operators_token(kb: Path, tmp_path: Path) -> None:
    port = free_port()
    process = serve(kb, tmp_path / "state", port, token=TOKEN)
    try:
        seen = asyncio.run(probe(port, TOKEN))
    finally:
        out = stop(process)
    assert seen["none"] == seen["wrong"] == seen["static"] == seen["ws_none"] == 401
    assert seen["bearer"] == seen["query"] == 200
    assert seen["cookie"] is not None  # the page's own requests carry it from here on
    assert seen["ws_token"] is True  # a console answered the authorised websocket
    assert TOKEN not in out  # the operator's own token is never printed


def test_a_token_is_made_and_printed_once_when_none_is_set(kb: Path, tmp_path: Path) -> None:
    port = free_port()
    process = serve(kb, tmp_path / "state", port, token=None)
    assert process.stdout is not None
    try:
        line = ""
        while "?token=" not in line:
            line = process.stdout.readline()
            assert line, "serve printed no URL"
        token = re.search(r"\?token=([A-Za-z0-9_-]+)", line).group(1)
        seen = asyncio.run(probe(port, token))
    finally:
        out = stop(process)
    assert len(token) >= 16
    assert seen["none"] == seen["ws_none"] == 401 and seen["query"] == 200
    assert token not in out  # printed once: the line read above, nowhere else


def test_a_public_address_without_a_token_is_refused(kb: Path, tmp_path: Path) -> None:
    process = serve(kb, tmp_path / "state", free_port(), "--host", "0.0.0.0", token=None)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        stop(process)
    assert process.returncode == 1, out
    assert err.startswith("goalsui: error: refusing to serve on 0.0.0.0 without a token")
    assert err.count("\n") == 1
