"""A turn's overhead with each agent preset beside a trivial command; point the CLIs at
``tests/model_server.py`` to leave a model's latency out."""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRIVIAL = "command"


async def _rounds(kb: Path, state: Path, presets: list[str], repeat: int) -> dict[str, Any]:
    from goalsui.kb.layout import WorkerSeed
    from goalsui.scheduler import Scheduler
    from goalsui.service import Service

    service = Service.open(kb, None, state)
    seeds = [
        WorkerSeed(
            name,
            {
                "schedule": {"cron": "0 3 * * *"},
                "runner": {"agent": name},
                "capabilities": ["read_kb", "todos"],
                "timeout": "5m",
            },
            prompt="# bench\n\nAnswer in one word.\n",
        )
        for name in presets
    ]
    seeds.append(
        WorkerSeed(
            TRIVIAL,
            {
                "schedule": {"cron": "0 3 * * *"},
                "runner": {"command": [sys.executable, "-c", "print('ok')"]},
            },
            prompt="# bench\n",
        )
    )
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
    scratch = Path(tempfile.mkdtemp(prefix="goalsui-bench-turns-"))
    try:
        kb = copy_sample_kb(scratch / "kb")
        figures = asyncio.run(_rounds(kb, scratch / "state", found, repeat))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
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
