"""The scheduler's tool listener (goalsui/mcp/http.py): one 127.0.0.1 port, one scope per
live run behind its own bearer token, nothing for anyone else.

A real listener in this loop, the MCP SDK's Streamable HTTP client, a real SQLite file.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from goalsui.kb.layout import WorkerSeed
from goalsui.mcp.http import ToolHost
from goalsui.service import Service
from tests.mcp_kit import end_run, start_run, text_of


@pytest.fixture
def svc(empty_kb: Path, make_service) -> Service:
    return make_service(empty_kb)


@contextlib.asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def worker_runs(svc: Service) -> tuple[int, int]:
    """Live runs of two workers: one with todos and schedule, one with no capability."""
    seeds = [
        WorkerSeed("busy", {"schedule": {"every": "1h"}, "capabilities": ["todos", "schedule"]}),
        WorkerSeed("bare", {"schedule": {"every": "1h"}, "capabilities": []}),
    ]
    goal = svc.goals.create("Http", "serve two runs", seeds).goal_id
    busy = start_run(svc, svc.workers.intent(goal, "busy")).id
    bare = start_run(svc, svc.workers.intent(goal, "bare")).id
    assert busy is not None and bare is not None
    return busy, bare


async def status_of(url: str, headers: dict[str, str]) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(
            url, json=body, headers={"Accept": "application/json, text/event-stream", **headers}
        )
    return response.status_code


async def test_each_token_reaches_its_own_runs_scope_and_nothing_else(svc: Service) -> None:
    busy, bare = worker_runs(svc)
    host = ToolHost(svc)
    try:
        async with host.serve_run(busy) as a, host.serve_run(bare) as b:
            assert a.url == b.url and a.url.startswith("http://127.0.0.1:")
            assert a.token != b.token and len(a.token) >= 40
            async with client(a.url, a.token) as session:
                tools = {t.name for t in (await session.list_tools()).tools}
                assert {"todo_add", "schedule_intent"} <= tools
                done = await session.call_tool("todo_add", {"text": "from run a"})
                assert not done.is_error
            async with client(b.url, b.token) as session:
                tools = {t.name for t in (await session.list_tools()).tools}
                assert "todo_add" not in tools and "schedule_intent" not in tools
            # what each run's agent was offered is on its run
            assert "todo_add" in (svc.agents.tool_session(busy) or {})["tools"]
            assert "todo_add" not in (svc.agents.tool_session(bare) or {})["tools"]
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": a.token}):
                assert await status_of(a.url, headers) == 401
            stale = a
        # the block ended: the run's token is gone with it
        assert await status_of(stale.url, {"Authorization": stale.authorization}) == 401
    finally:
        await host.stop()
    port = int(stale.url.split(":")[2].split("/")[0])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


async def test_a_run_that_ended_gets_no_tool_call_through(svc: Service) -> None:
    busy, _ = worker_runs(svc)
    host = ToolHost(svc)
    try:
        async with (
            host.serve_run(busy) as endpoint,
            client(endpoint.url, endpoint.token) as session,
        ):
            end_run(svc, busy)
            refused = await session.call_tool("todo_add", {"text": "too late"})
            assert refused.is_error and "not running" in text_of(refused)
    finally:
        await host.stop()


async def test_the_listener_binds_loopback_only(svc: Service) -> None:
    host = ToolHost(svc)
    await host.start()
    try:
        assert host.port is not None
        addresses = [
            a for a in socket.getaddrinfo(socket.gethostname(), None) if a[4][0] != "127.0.0.1"
        ]
        for family, _, _, _, address in addresses[:3]:
            if family != socket.AF_INET:
                continue
            with pytest.raises(OSError):
                socket.create_connection((str(address[0]), host.port), timeout=1)
        await asyncio.sleep(0)
    finally:
        await host.stop()


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"todo_complete",'
         '"arguments":{"todo_id":9223372036854775808}}}', "out of range"),
        ('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"todo_add",'
         '"arguments":{"text":"\\ud800"}}}', "surrogate"),
        ('{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"n":' + "9" * 5000 + "}}",
         "out of range"),
    ],
)  # fmt: skip
async def test_a_request_the_sdk_cannot_read_gets_an_answer_with_a_reason(
    svc: Service, raw: str, words: str
) -> None:
    busy, _ = worker_runs(svc)
    host = ToolHost(svc)
    try:
        async with host.serve_run(busy) as endpoint:
            headers = {
                "Authorization": endpoint.authorization,
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            }
            async with httpx2.AsyncClient(timeout=10) as http:
                response = await http.post(endpoint.url, content=raw.encode(), headers=headers)
            assert response.status_code == 400
            error = response.json()["error"]
            assert words in error["message"] and response.json()["id"] in (7, 8, 9)
    finally:
        await host.stop()


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1024), timeout=seconds) == b""
    except (TimeoutError, ConnectionError):
        return False


async def test_idle_and_slow_clients_are_cut_before_any_token_check(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections past the cap close at once, ones that send nothing close after the
    header timeout, a client trickling its headers is cut, and the port still serves."""
    from goalsui.mcp import http as tool_http

    monkeypatch.setattr(tool_http, "MAX_CONNECTIONS", 8)
    monkeypatch.setattr(tool_http, "HEADER_TIMEOUT_S", 1.0)
    busy, _ = worker_runs(svc)
    host = ToolHost(svc)
    try:
        async with host.serve_run(busy) as endpoint:
            port = int(endpoint.url.split(":")[2].split("/")[0])
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
            over = [await _closed_within(reader, 0.5) for reader, _ in idle]
            assert sum(over) >= 12  # everything past the cap went at once
            rest = [await _closed_within(reader, 3.0) for reader, _ in idle]
            assert all(a or b for a, b in zip(over, rest, strict=True))  # the rest by the timeout
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            cut = False
            for byte in b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                try:
                    writer.write(bytes([byte]))
                    await writer.drain()
                except ConnectionError:
                    cut = True
                    break
                if await _closed_within(reader, 0.2):
                    cut = True
                    break
            assert cut, "a client trickling its headers was kept"
            for _, w in [*idle, (reader, writer)]:
                w.close()
            async with client(endpoint.url, endpoint.token) as session:  # still serving
                assert "todo_add" in {t.name for t in (await session.list_tools()).tools}
    finally:
        await host.stop()
