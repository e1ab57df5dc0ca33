"""``goalsui bench console``: idle CPU of the console beside the bare app (``stay``), as the share of
one core over a window, after a warm-up (the scheduler, the KB watch and the first plan start after
the records), on the sample KB with its scheduler on and the intents due in the window paused.
Target: at most 1 % of a core."""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from goalsui.bench.pty_child import PtyChild
from goalsui.domain.records import saved_id

IDLE_TARGET_PCT = 1.0
WARMUP_S = 5.0


@dataclass
class IdleFigures:
    seconds: float
    console_pct: float
    bare_pct: float

    @property
    def ok(self) -> bool:
        return self.console_pct <= IDLE_TARGET_PCT


def quiet_kb(kb: Path, state: Path, window_s: float) -> int:
    """Pause every intent that would fire during the measurement; returns how many."""
    from goalsui.service import Service

    service = Service.open(kb, None, state)
    try:
        horizon = service.now() + timedelta(seconds=window_s + WARMUP_S + 120)
        paused = 0
        for intent in service.intents.list(status="active"):
            if intent.next_run_at is None or intent.next_run_at <= horizon:
                service.intents.pause(saved_id(intent))
                paused += 1
        return paused
    finally:
        service.close()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def idle_share(argv: list[str], marker: Path, env: dict[str, str], window_s: float) -> float:
    """Percent of one core ``argv`` uses over ``window_s`` once it has painted and warmed up."""
    marker.unlink(missing_ok=True)
    child = PtyChild(argv, {**env, "GOALSUI_BENCH_STAY": "1"})
    try:
        child.wait_for(marker.exists, 180, "paint its records")
        time.sleep(WARMUP_S)
        child.check_alive()
        before, started = cpu_seconds(child.pid), time.monotonic()
        time.sleep(window_s)
        child.check_alive()
        used, took = cpu_seconds(child.pid) - before, time.monotonic() - started
    finally:
        child.stop(signal.SIGKILL)
    return 100.0 * used / took


def console_argv(kb: Path, state: Path) -> list[str]:
    """The command that starts the console on ``kb`` with its state in ``state``."""
    return [sys.executable, "-m", "goalsui", "--kb", str(kb), "--state-dir", str(state), "console"]


def measure_idle(
    kb: Path, state: Path, goals: int, workers: int, window_s: float, tmp: Path, env: dict[str, str]
) -> IdleFigures:
    quiet_kb(kb, state, window_s)
    marker = tmp / "idle.json"
    console = console_argv(kb, state)
    bare = [sys.executable, "-m", "goalsui.bench.bare_app", str(goals), str(workers)]
    bare += [str(marker), "stay"]
    bare_pct = idle_share(bare, marker, env, window_s)
    console_env = {**env, "GOALSUI_BENCH_FIRST_PAINT": str(marker)}
    console_pct = idle_share(console, marker, console_env, window_s)
    return IdleFigures(window_s, console_pct, bare_pct)
