"""Slow and idle clients cannot starve the process hosting the hook listener (issue 21.4).

Real sockets against a real listener on 127.0.0.1: slow-loris clients that trickle
header bytes, clients that never send the body they announced, and a flood of idle
connections over the cap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import aiohttp
import pytest

from goalsui.hooks.server import start_listener
from goalsui.ops.listen import Limits
from goalsui.service import Service
from tests.hooks_kit import CI_ENV, SECRET, signed

NOW = 1_800_000_000
HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
CAP = 20
PROMPTLY = 30.0  # a bound on waiting, not a speed claim


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CI_ENV, SECRET)


async def start(service: Service):
    return await start_listener(
        service,
        "127.0.0.1",
        0,
        clock=lambda: NOW,
        body_timeout=BODY_TIMEOUT,
        limits=Limits(max_connections=CAP, header_timeout=HEADER_TIMEOUT),
    )


async def closed_by_server(reader: asyncio.StreamReader, limit: float = PROMPTLY) -> bytes:
    """Whatever the server sent before closing; fails if it keeps the connection open."""
    got = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            chunk = await asyncio.wait_for(reader.read(65536), deadline - time.monotonic())
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk
    raise AssertionError("the listener kept the connection open")


async def slow_loris(port: int, stop: asyncio.Event) -> asyncio.StreamReader:
    """Open a connection and trickle header bytes that never end, until ``stop``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\n")

    async def trickle() -> None:
        for n in range(10_000):
            if stop.is_set() or writer.is_closing():
                return
            try:
                writer.write(f"X-Slow-{n}: a\r\n".encode())
                await writer.drain()
            except (ConnectionError, RuntimeError):
                return
            await asyncio.sleep(0.2)

    asyncio.get_running_loop().create_task(trickle())
    return reader


async def test_slow_loris_connections_are_closed_after_the_header_timeout(
    service: Service,
) -> None:
    listener = await start(service)
    stop = asyncio.Event()
    try:
        readers = [await slow_loris(listener.port, stop) for _ in range(CAP)]
        outcomes = await asyncio.gather(*(closed_by_server(r) for r in readers))
        assert all(b" 200 " not in o and b" 202 " not in o for o in outcomes)
        assert len(listener.runner.server.connections) == 0
    finally:
        stop.set()
        await listener.close()


async def test_a_body_that_never_arrives_gets_408_and_the_connection_ends(
    service: Service,
) -> None:
    listener = await start(service)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        headers = signed(b"{}", "delivery-slow", timestamp=NOW)
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(
            (f"POST /hooks/ci HTTP/1.1\r\nHost: x\r\n{head}Content-Length: 1000\r\n\r\n").encode()
            + b'{"a": '
        )
        await writer.drain()
        answer = await closed_by_server(reader)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 408 ")
    finally:
        await listener.close()


async def test_connections_over_the_cap_are_refused_and_logged_once(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="goalsui.hooks")
    listener = await start(service)
    writers = []
    try:
        opened = [await asyncio.open_connection("127.0.0.1", listener.port) for _ in range(CAP * 3)]
        writers = [w for _, w in opened]
        # over the cap: told 503 and closed at once, long before any timeout
        refused = await asyncio.gather(
            *(closed_by_server(r, HEADER_TIMEOUT / 2) for r, _ in opened[CAP:]),
            return_exceptions=True,
        )
        told = [x for x in refused if isinstance(x, bytes) and x.startswith(b"HTTP/1.1 503 ")]
        assert len(told) >= CAP * 2 - 2
        assert len(listener.runner.server.connections) <= CAP
        assert listener.cap.refused >= CAP * 2 - 2
        lines = [r for r in caplog.records if "connection refused" in r.getMessage()]
        assert len(lines) == 1  # once per interval, not once per attempt
        # the idle ones time out; then a real delivery gets through
        await asyncio.gather(*(closed_by_server(r) for r, _ in opened[:CAP]))
        body = json.dumps({"ok": True}).encode()
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{listener.url}/hooks/ci",
                data=body,
                headers={"Content-Type": "application/json", **signed(body, "d-1", timestamp=NOW)},
            ) as response,
        ):
            assert response.status == 202
    finally:
        for w in writers:
            w.close()
        await listener.close()


async def test_the_cap_holds_for_a_burst_accepted_in_one_loop_turn(service: Service) -> None:
    """A busy loop finds a whole backlog of connections at once and accepts them in one
    turn, before any is counted by the server: the cap still keeps only ``CAP``."""
    listener = await start(service)
    socks: list[socket.socket] = []
    try:
        for _ in range(CAP * 3):  # the loop does not run: every one waits in the backlog
            socks.append(socket.create_connection(("127.0.0.1", listener.port), timeout=5))
        peak = 0
        while listener.cap.refused < CAP * 2 and peak <= CAP:
            await asyncio.sleep(0.01)
            peak = max(peak, len(listener.runner.server.connections))
        await asyncio.sleep(0.1)
        assert max(peak, len(listener.runner.server.connections)) == CAP
        assert listener.cap.refused == CAP * 2 and listener.cap.open == CAP
    finally:
        for s in socks:
            s.close()
        await listener.close()
    assert listener.cap.open == 0  # every kept connection counted out as it ended


async def test_repeated_refused_deliveries_log_one_line_per_interval(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="goalsui.hooks")
    listener = await start(service)
    try:
        async with aiohttp.ClientSession() as session:
            for n in range(50):
                async with session.post(
                    f"{listener.url}/hooks/ci",
                    data=b"{}",
                    headers={
                        "Content-Type": "application/json",
                        **signed(b"{}", f"d{n}", secret="wrong"),
                    },
                ) as response:
                    assert response.status == 401
    finally:
        await listener.close()
    lines = [r for r in caplog.records if "refused 401" in r.getMessage()]
    assert len(lines) == 1


async def test_a_flood_of_malformed_requests_logs_one_line(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    listener = await start(service)
    try:
        for _ in range(30):
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\nA: 1\r\nA\x01: 2\r\n\r\n")
            await writer.drain()
            await closed_by_server(reader)
            writer.close()
    finally:
        await listener.close()
    noisy = [r for r in caplog.records if r.name.startswith("aiohttp")]
    assert len(noisy) <= 1
    assert all(r.exc_info is None for r in noisy)  # one line, no traceback
