"""``goalsui bench mcp``: how fast an agent gets goalsui's tools over HTTP (target 0.3 s) and stdio,
beside ``mcp-server-time``, and their size; with ``--turns``, a turn's overhead with each agent
preset beside a trivial command (point the CLIs at ``tests/model_server.py`` to leave a model's
latency out)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from goalsui.bench import goalsui_argv, scratch_dir
from goalsui.domain.records import saved_id

TARGET_S = 0.3
TRIVIAL = "command"
REFERENCES = {
    "mcp-server-time": ("mcp_server_time", ["--local-timezone", "UTC"]),
    "mcp-server-git": ("mcp_server_git", []),
    "mcp-server-fetch": ("mcp_server_fetch", []),
}


def _tools_bytes(tools: Sequence[Any]) -> int:
    listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return len(json.dumps({"tools": listed}, separators=(",", ":")).encode())


async def _stdio_seconds(
    command: str, args: list[str], env: dict[str, str] | None = None
) -> tuple[float, int, int]:
    """Start a stdio server, initialise, list tools: (seconds, tool count, list bytes)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, env=env or dict(os.environ))
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            elapsed = time.perf_counter() - started
    return elapsed, len(tools), _tools_bytes(tools)


async def _http_rounds(
    kb: Path, state: Path, goal: str, thread: int, repeat: int
) -> dict[str, Any]:
    """The default path: the listener opens a scope, a client lists its tools over HTTP."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from goalsui.mcp.http import ToolHost
    from goalsui.mcp.scope import operator_scope
    from goalsui.service import Service

    service = Service.open(kb, None, state)
    host = ToolHost(service)
    opened, listed, count, size = [], [], 0, 0
    try:
        for round_ in range(repeat + 1):  # the first round warms up, not measured
            t0 = time.perf_counter()
            scope = await asyncio.to_thread(operator_scope, service, goal, None, thread)
            async with host.serve_scope(scope) as endpoint:
                t1 = time.perf_counter()
                headers = {"Authorization": endpoint.authorization}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    streamable_http_client(endpoint.url, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    t2 = time.perf_counter()
            if round_:
                opened.append(t1 - t0)
                listed.append(t2 - t1)
            count, size = len(tools), _tools_bytes(tools)
    finally:
        await host.stop()
        service.close()
    return {"open_s": opened, "tools_listed_s": listed, "tools": count, "tools_bytes": size}


def _prepare(scratch: Path) -> tuple[Path, Path, str, int]:
    """A scratch sample KB: its first goal and a thread (a session with every tool)."""
    from goalsui.kb.layout import copy_sample_kb
    from goalsui.service import Service

    kb = copy_sample_kb(scratch / "kb")
    state = scratch / "state"
    with closing(Service.open(kb, None, state)) as service:
        goal = service.goals.list()[0].goal_id
        thread = saved_id(service.threads.create("bench"))
    return kb, state, goal, thread


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values)}


def _references(repeat: int) -> dict[str, Any]:
    """Cold start (mcp-server-time only) and tools/list size of each installed reference."""
    found: dict[str, Any] = {}
    for name, (module, args) in REFERENCES.items():
        if importlib.util.find_spec(module) is None:
            continue
        argv = ["-m", module, *args]
        rounds = [
            asyncio.run(_stdio_seconds(sys.executable, argv))
            for _ in range(repeat + 1 if name == "mcp-server-time" else 1)
        ]
        entry: dict[str, Any] = {"tools": rounds[0][1], "tools_bytes": rounds[0][2]}
        if name == "mcp-server-time":
            entry["cold_start_s"] = _stats([r[0] for r in rounds[1:]])
        found[name] = entry
    return found


def measure(repeat: int) -> dict[str, Any]:
    with scratch_dir("goalsui-bench-mcp-") as scratch:
        kb, state, goal, thread = _prepare(scratch)
        http = asyncio.run(_http_rounds(kb, state, goal, thread, repeat))
        env = {k: v for k, v in os.environ.items() if k != "GOALSUI_DB"}  # the scratch KB's own
        python, *argv = goalsui_argv(kb, state, "mcp", "--goal", goal)
        stdio = [asyncio.run(_stdio_seconds(python, argv, env)) for _ in range(repeat + 1)]
        references = _references(repeat)
    listed = statistics.median(http["tools_listed_s"])
    cold = _stats([r[0] for r in stdio[1:]])
    figures: dict[str, Any] = {
        "repeat": repeat,
        "tools": http["tools"],
        "tools_bytes": http["tools_bytes"],
        "http_open_s": _stats(http["open_s"]),
        "http_tools_listed_s": _stats(http["tools_listed_s"]),
        "stdio_cold_s": cold,
        "references": references,
        "target_s": TARGET_S,
        "met": listed <= TARGET_S,
    }
    time_ref = references.get("mcp-server-time", {}).get("cold_start_s")
    if time_ref:
        figures["stdio_cold_vs_time_server"] = cold["median"] / time_ref["median"]
        figures["http_vs_time_server"] = listed / time_ref["median"]
    return figures


def _report(f: dict[str, Any]) -> str:
    verdict = "met" if f["met"] else "NOT met"
    lines = [
        f"goalsui tools: {f['tools']} tools, tools/list {f['tools_bytes']:,} bytes; "
        f"{f['repeat']} runs each (medians)",
        f"  default path (scheduler's HTTP listener): agent start to tools listed "
        f"{f['http_tools_listed_s']['median']:.3f} s (max {f['http_tools_listed_s']['max']:.3f}; "
        f"target <= {TARGET_S:g} s: {verdict}); the listener opens the run's scope in "
        f"{f['http_open_s']['median'] * 1000:.1f} ms before the agent starts",
        f"  stdio cold (goalsui mcp as a process): {f['stdio_cold_s']['median']:.3f} s",
    ]
    refs = f["references"]
    time_ref = refs.get("mcp-server-time", {}).get("cold_start_s")
    if time_ref:
        lines.append(
            f"  reference mcp-server-time cold start: {time_ref['median']:.3f} s "
            f"(goalsui stdio cold {f['stdio_cold_vs_time_server']:.2f}x it; "
            f"default path {f['http_vs_time_server']:.2f}x it)"
        )
    else:
        lines.append("  reference mcp-server-time: not installed (pip install mcp-server-time)")
    for name, entry in refs.items():
        lines.append(
            f"  tools/list of {name}: {entry['tools']} tools, {entry['tools_bytes']:,} bytes"
        )
    return "\n".join(lines)


async def _rounds(kb: Path, state: Path, presets: list[str], repeat: int) -> dict[str, Any]:
    from goalsui.kb.layout import WorkerSeed
    from goalsui.scheduler import Scheduler
    from goalsui.service import Service

    service = Service.open(kb, None, state)
    daily = {"cron": "0 3 * * *"}
    agent = {"capabilities": ["read_kb", "todos"], "timeout": "5m"}
    prompt = "# bench\n\nAnswer in one word.\n"
    seeds = [
        WorkerSeed(name, {"schedule": daily, "runner": {"agent": name}, **agent}, prompt=prompt)
        for name in presets
    ]
    trivial = {"command": [sys.executable, "-c", "print('ok')"]}
    seeds.append(WorkerSeed(TRIVIAL, {"schedule": daily, "runner": trivial}, prompt="# bench\n"))
    goal = service.goals.create("Turn bench", "time one turn per runner", seeds).goal_id
    sched = Scheduler(service, grace_seconds=1)
    seconds: dict[str, list[float]] = {name: [] for name in [*presets, TRIVIAL]}
    statuses: dict[str, list[str]] = {name: [] for name in seconds}
    try:
        for _ in range(repeat + 1):  # the first round warms up (the listener, caches)
            for name in seconds:
                service.workers.run_now(goal, name)
                started = time.perf_counter()
                runs = await sched.tick()
                await sched.drain(timeout=600)
                elapsed = time.perf_counter() - started
                for run_id in runs:
                    run = service.runs.get(run_id)
                    statuses[name].append(
                        run.status if not run.reason else f"{run.status}: {run.reason[:60]}"
                    )
                seconds[name].append(elapsed)
    finally:
        await sched.stop(grace=1)
        service.close()
    return {
        name: {
            "median_s": statistics.median(values[1:]),
            "max_s": max(values[1:]),
            "statuses": sorted(set(statuses[name][1:])),
        }
        for name, values in seconds.items()
    }


def measure_turns(presets: list[str], repeat: int) -> dict[str, Any]:
    """Claim-to-end seconds per runner (medians over ``repeat`` rounds after a warm-up)."""
    from goalsui.kb.layout import copy_sample_kb

    found = [p for p in presets if shutil.which(p)]
    with scratch_dir("goalsui-bench-turns-") as scratch:
        kb = copy_sample_kb(scratch / "kb")
        figures = asyncio.run(_rounds(kb, scratch / "state", found, repeat))
    trivial = figures[TRIVIAL]["median_s"]
    for name in found:
        figures[name]["overhead_vs_command_s"] = figures[name]["median_s"] - trivial
    for name in presets:
        if name not in found:
            figures[name] = {"missing": f"'{name}' is not on PATH"}
    return figures


def report_turns(figures: dict[str, Any]) -> list[str]:
    lines = ["  a turn, claim to end (real scheduler; medians):"]
    for name, fig in figures.items():
        if "missing" in fig:
            lines.append(f"    {name}: {fig['missing']}")
            continue
        extra = ""
        if "overhead_vs_command_s" in fig:
            extra = f" ({fig['overhead_vs_command_s']:+.3f} s beside the trivial command)"
        status = ", ".join(fig["statuses"])
        lines.append(f"    {name}: {fig['median_s']:.3f} s{extra}; runs {status}")
    return lines


def main(args: argparse.Namespace) -> int:
    """Entry point of ``goalsui bench mcp`` (the command line checks ``--repeat``)."""
    figures = measure(args.repeat)
    lines = [_report(figures)]
    if args.turns:
        presets = [p.strip() for p in str(args.turns).split(",") if p.strip()]
        figures["turns"] = measure_turns(presets, args.repeat)
        lines += report_turns(figures["turns"])
    print(json.dumps(figures, indent=2) if args.json else "\n".join(lines))
    return 0
