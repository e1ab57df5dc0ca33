"""``goalsui bench mcp``: time from starting ``goalsui mcp`` to its tools list.

On a scratch copy of the sample KB (database prepared first, not measured), each round
starts ``python -m goalsui ... mcp --goal G`` with the MCP SDK's stdio client, sends
``initialize`` and ``tools/list``, and stops the clock when the list arrives. Beside it,
in the same run: a bare interpreter start (``python -c pass``) and the MCP SDK alone
(a process that only imports ``mcp.server``), so a slow machine shows as a slow
reference too. Each process is run once unmeasured first (bytecode, file cache).
Each round is timed twice: cold (no scheduler running, the command imports everything
itself) and hosted (the way a scheduler starts its runs' sessions: through its warm host,
:mod:`goalsui.cli.mcp_host`). Target: median < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S = 1.0


async def _tools_list_seconds(
    kb: Path, state: Path, goal: str, host: Path | None = None
) -> tuple[float, int]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    argv = ["-m", "goalsui", "--kb", str(kb), "--state-dir", str(state), "mcp", "--goal", goal]
    env = {k: v for k, v in os.environ.items() if k != "GOALSUI_MCP_HOST"}
    if host is not None:
        env["GOALSUI_MCP_HOST"] = str(host)
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            elapsed = time.perf_counter() - started
    return elapsed, len(tools)


def _process_seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def _prepare(scratch: Path) -> tuple[Path, Path, str, str]:
    from goalsui.kb.layout import copy_sample_kb
    from goalsui.service import Service

    kb = copy_sample_kb(scratch / "kb")
    state = scratch / "state"
    service = Service.open(kb, None, state)
    try:
        goal, db_url = service.list_goals()[0].goal_id, service.db_url
    finally:
        service.close()
    return kb, state, goal, db_url


def _start_host(kb: Path, state: Path, db_url: str) -> Any:
    from goalsui.runners.mcp_host import McpHost
    from goalsui.runners.presets import McpLaunch

    host = McpHost()
    host.ensure(McpLaunch.for_run(kb, state, db_url, 0))
    if not host.ready(timeout=120):
        host.stop()
        raise RuntimeError("the warm tool-server host did not start")
    return host


def _median(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values)}


def measure(repeat: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="goalsui-bench-mcp-"))
    host = None
    try:
        kb, state, goal, db_url = _prepare(scratch)
        host = _start_host(kb, state, db_url)
        asyncio.run(_tools_list_seconds(kb, state, goal))  # warm-ups, not measured
        asyncio.run(_tools_list_seconds(kb, state, goal, host.socket))
        _process_seconds("import mcp.server")
        cold, hosted, bare, sdk, tools = [], [], [], [], 0
        for _ in range(repeat):
            seconds, tools = asyncio.run(_tools_list_seconds(kb, state, goal))
            cold.append(seconds)
            hosted.append(asyncio.run(_tools_list_seconds(kb, state, goal, host.socket))[0])
            bare.append(_process_seconds("pass"))
            sdk.append(_process_seconds("import mcp.server"))
    finally:
        if host is not None:
            host.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "repeat": repeat,
        "tools": tools,
        "tools_list_s": _median(cold),
        "hosted_tools_list_s": _median(hosted),
        "python_start_s": {"median": statistics.median(bare)},
        "sdk_import_s": {"median": statistics.median(sdk)},
        "target_s": TARGET_S,
        "met": statistics.median(cold) < TARGET_S,
        "hosted_met": statistics.median(hosted) < TARGET_S,
    }


def main(args: argparse.Namespace) -> int:
    from goalsui.errors import ValidationError

    if not 1 <= args.repeat <= 100:
        raise ValidationError("--repeat must be between 1 and 100")
    figures = measure(args.repeat)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0

    def row(label: str, key: str, met: bool) -> str:
        fig = figures[key]
        verdict = "met" if met else "NOT met"
        return (
            f"  {label}: median {fig['median']:.3f} s, max {fig['max']:.3f} s "
            f"(target < {TARGET_S:g} s: {verdict})"
        )

    print(
        f"goalsui mcp: start to tools list ({figures['tools']} tools), "
        f"{figures['repeat']} runs each\n"
        + row("hosted (a scheduler's run)", "hosted_tools_list_s", figures["hosted_met"])
        + "\n"
        + row("cold (no scheduler)", "tools_list_s", figures["met"])
        + "\n"
        f"  references: python start {figures['python_start_s']['median']:.3f} s, "
        f"python + import mcp.server {figures['sdk_import_s']['median']:.3f} s"
    )
    return 0
