#!/usr/bin/env python3
"""A stand-in for an agent CLI on a nightshift (no model, real git).

As the commander (GOALSUI_WORKER=commander, cwd = the goal's folder) it reads
``backlog.md`` lines ``- WORKER: TASK`` and puts each into tonight's plan through
goalsui's tool server (``nightshift_plan_add``), reached through the MCP config named by
``--mcp-config FILE`` (the run's HTTP endpoint, or a stdio command). Like a real agent
CLI, it opens its tools and lists them first, whatever its role. As a task worker (cwd = the task's git worktree) it reads
its task from the prompt on stdin, appends it to ``NIGHTSHIFT.md``, commits, and prints
a one-line summary. A task containing FAIL commits and then exits 1; one containing
SLEEP sleeps for a long time (for timeouts); one containing NOTHING commits nothing.
"""

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def connect(config_file: str) -> AsyncIterator[ClientSession]:
    """An initialised session on the config's goalsui entry, its tools listed."""
    with open(config_file, encoding="utf-8") as fh:
        server: dict[str, Any] = json.load(fh)["mcpServers"]["goalsui"]
    async with contextlib.AsyncExitStack() as stack:
        if "url" in server:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=server.get("headers") or {}, timeout=60)
            )
            streams = streamable_http_client(server["url"], http_client=http)
        else:
            params = StdioServerParameters(
                command=server["command"], args=server["args"], env={**server.get("env", {})}
            )
            streams = stdio_client(params)
        read, write = await stack.enter_async_context(streams)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        await session.list_tools()
        yield session


async def open_tools(config_file: str) -> None:
    async with connect(config_file):
        pass


async def plan_through_tools(config_file: str, tasks: list[tuple[str, str]]) -> list[str]:
    answers = []
    async with connect(config_file) as session:
        for worker_name, task in tasks:
            args = {"worker": worker_name, "task": task, "reason": "it is at the top of backlog.md"}
            res = await session.call_tool("nightshift_plan_add", args)
            if res.is_error:
                raise SystemExit(f"nightshift_plan_add refused: {res.content}")
            answers.append("created" if res.structured_content["created"] else "already planned")
    return answers


def commander(argv: list[str]) -> int:
    backlog = "backlog.md"
    if not os.path.exists(backlog):
        print("NOTHING_TO_REPORT")
        return 0
    with open(backlog, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    tasks = []
    for line in lines:
        match = re.match(r"^- ([a-z0-9-]+): (.+)$", line.strip())
        if match:
            tasks.append((match[1], match[2]))
    answers = asyncio.run(plan_through_tools(argv[argv.index("--mcp-config") + 1], tasks))
    print(f"planned {len(tasks)} task(s): {', '.join(answers) or 'none'}")
    return 0


def worker(prompt: str) -> int:
    match = re.search(r"## Tonight's task\n\n(.+)\n", prompt)
    if not match:
        print("no task in the prompt", file=sys.stderr)
        return 3
    task = match[1].strip()
    if "SLEEP" in task:
        time.sleep(300)
    if "NOTHING" not in task:
        with open("NIGHTSHIFT.md", "a", encoding="utf-8") as fh:
            fh.write(f"- {task}\n")
        subprocess.run(["git", "add", "NIGHTSHIFT.md"], check=True)
        subprocess.run(
            [
                "git",
                "-c",
                "user.name=Night Agent",
                "-c",
                "user.email=night@example.invalid",
                "commit",
                "-q",
                "-m",
                f"nightshift: {task}",
            ],
            check=True,
        )
    if "FAIL" in task:
        print("the tests failed after my change", file=sys.stderr)
        return 1
    print(f"did: {task}")
    return 0


def main() -> int:
    prompt = sys.stdin.read()
    if os.environ.get("GOALSUI_WORKER") == "commander":
        return commander(sys.argv[1:])
    if "--mcp-config" in sys.argv:
        asyncio.run(open_tools(sys.argv[sys.argv.index("--mcp-config") + 1]))
    return worker(prompt)


if __name__ == "__main__":
    sys.exit(main())
