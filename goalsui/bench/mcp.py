"""``goalsui bench mcp``: time from starting ``goalsui mcp`` to its tools list.

On a scratch copy of the sample KB (database prepared first, not measured), each round
starts ``python -m goalsui ... mcp --goal G`` with the MCP SDK's stdio client, sends
``initialize`` and ``tools/list``, and stops the clock when the list arrives. Beside it,
in the same run: a bare interpreter start (``python -c pass``) and the MCP SDK alone
(a process that only imports ``mcp.server``), so a slow machine shows as a slow
reference too. Each process is run once unmeasured first (bytecode, file cache).
Target: median < 1 s.
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


async def _tools_list_seconds(kb: Path, state: Path, goal: str) -> tuple[float, int]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    argv = ["-m", "goalsui", "--kb", str(kb), "--state-dir", str(state), "mcp", "--goal", goal]
    params = StdioServerParameters(command=sys.executable, args=argv)
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


def _prepare(scratch: Path) -> tuple[Path, Path, str]:
    from goalsui.kb.layout import copy_sample_kb
    from goalsui.service import Service

    kb = copy_sample_kb(scratch / "kb")
    state = scratch / "state"
    service = Service.open(kb, None, state)
    try:
        goal = service.list_goals()[0].goal_id
    finally:
        service.close()
    return kb, state, goal


def measure(repeat: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="goalsui-bench-mcp-"))
    try:
        kb, state, goal = _prepare(scratch)
        asyncio.run(_tools_list_seconds(kb, state, goal))  # warm-up, not measured
        _process_seconds("import mcp.server")
        server, bare, sdk, tools = [], [], [], 0
        for _ in range(repeat):
            seconds, tools = asyncio.run(_tools_list_seconds(kb, state, goal))
            server.append(seconds)
            bare.append(_process_seconds("pass"))
            sdk.append(_process_seconds("import mcp.server"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "repeat": repeat,
        "tools": tools,
        "tools_list_s": {"median": statistics.median(server), "max": max(server)},
        "python_start_s": {"median": statistics.median(bare)},
        "sdk_import_s": {"median": statistics.median(sdk)},
        "target_s": TARGET_S,
        "met": statistics.median(server) < TARGET_S,
    }


def main(args: argparse.Namespace) -> int:
    from goalsui.errors import ValidationError

    if not 1 <= args.repeat <= 100:
        raise ValidationError("--repeat must be between 1 and 100")
    figures = measure(args.repeat)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"goalsui mcp: start to tools list ({figures['tools']} tools), "
        f"median {figures['tools_list_s']['median']:.3f} s, max {figures['tools_list_s']['max']:.3f} s "
        f"over {figures['repeat']} runs (target < {TARGET_S:g} s: "
        f"{'met' if figures['met'] else 'NOT met'})\n"
        f"  references: python start {figures['python_start_s']['median']:.3f} s, "
        f"python + import mcp.server {figures['sdk_import_s']['median']:.3f} s"
    )
    return 0
