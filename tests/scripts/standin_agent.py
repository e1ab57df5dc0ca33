"""A stand-in for an agent CLI (claude -p style) that acts through goalsui's tools.

It reads the prompt on stdin, finds the MCP config (``--mcp-config FILE`` or the first
argument), starts the server named ``goalsui`` in it with the MCP SDK's stdio client,
and acts "as a model would": it reads the worker's ``prompt.md`` through
``goal_kb_read`` and performs the lines ``CALL <tool> <json arguments>`` written there.
``{first_open_todo}`` in the arguments is the id of the thread's first open todo
(from ``todo_list``). It prints a JSON result in Claude Code's print-mode shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

CALL = re.compile(r"^CALL (\w+) (.*)$", re.MULTILINE)


def config_path(argv: list[str]) -> str:
    if "--mcp-config" in argv:
        return argv[argv.index("--mcp-config") + 1]
    return argv[0]


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@contextlib.asynccontextmanager
async def connect(server: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """A session on the config's entry: Streamable HTTP (``url``) or stdio (``command``)."""
    if "url" in server:
        headers = server.get("headers") or {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(server["url"], http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session
        return
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env={**server.get("env", {})}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        yield session


async def act(prompt: str, config: dict[str, Any]) -> dict[str, Any]:
    server = config["mcpServers"]["goalsui"]
    calls: list[dict[str, Any]] = []
    async with connect(server) as session:
        await session.initialize()
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        worker = os.environ.get("GOALSUI_WORKER") or ""
        plan = ""
        if worker and "goal_kb_read" in tools:
            res = await session.call_tool("goal_kb_read", {"path": f"workers/{worker}/prompt.md"})
            plan = res.structured_content["text"] if not res.is_error else ""
        for name, raw in CALL.findall(plan):
            if "{first_open_todo}" in raw:
                listing = await session.call_tool("todo_list", {})
                open_ids = [t["id"] for t in listing.structured_content["todos"] if not t["done"]]
                raw = raw.replace("{first_open_todo}", str(open_ids[0]))
            res = await session.call_tool(name, json.loads(raw))
            calls.append({"name": name, "is_error": res.is_error, "text": text_of(res)})
    url = server.get("url")
    return {"tools": tools, "calls": calls, "prompt_chars": len(prompt), "url": url}


def main() -> int:
    prompt = sys.stdin.read()
    with open(config_path(sys.argv[1:]), encoding="utf-8") as fh:
        config = json.load(fh)
    done = asyncio.run(act(prompt, config))
    summary = f"stand-in agent made {len(done['calls'])} tool calls: " + ", ".join(
        c["name"] + (" (error)" if c["is_error"] else "") for c in done["calls"]
    )
    print(
        json.dumps(
            {
                "type": "result",
                "result": summary,
                "total_cost_usd": 0.0125,
                "usage": {"input_tokens": 1200, "output_tokens": 80},
                "goalsui_standin": done,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
