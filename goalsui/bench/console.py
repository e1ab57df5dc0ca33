"""``goalsui bench console``: start-up, memory, idle CPU and refresh latency, each beside a reference.

- **Start**: process start to the first painted dashboard (panes laid out, the goal tree from the
  KB folders) and to the dashboard complete (records loaded and painted), on the sample KB and a
  generated KB of 1,000 goals x 5 workers, beside a bare Textual app of the same size
  (:mod:`goalsui.bench.bare_app`) in the same run, both in a 160x48 pseudo-terminal. Targets:
  first paint <= 1.3x bare (sample KB), <= 2x (large KB); complete <= 1.5x bare (sample KB).
  Both start as an installed goalsui does, with bytecode cached (``PYTHONPYCACHEPREFIX``) after an
  unmeasured run; ``GOALSUI_BENCH_NO_BYTECODE=1`` keeps the environment as it is.
- **Peak RSS**: ``VmHWM`` read inside the child once the service is open (``ru_maxrss`` would
  report the bench's own peak, since it survives ``exec``), beside the bare app's at its paint.
- **Idle CPU**: the share of one core over ``--idle-seconds`` after a warm-up (the scheduler, the
  KB watch and the first plan start after the records), on the sample KB with its scheduler on
  and the intents due in the window paused, beside the bare app (``stay``). Target: <= 1 %.
- **Refresh**: a ``prompt.md`` write to the refreshed detail pane (p50, p95) beside raw
  ``watchfiles.awatch`` in the same process. Target: p95 <= raw p95 + 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from goalsui.bench import goalsui_argv, scratch_dir
from goalsui.bench.pty_child import COLS, ROWS, PtyChild
from goalsui.bench.scheduler import _pct
from goalsui.domain.records import saved_id

#: Start-ups of each app per KB: the figures are their medians (a VM varies by 0.05x from run to run).
START_REPEAT = 7
START_TIMEOUT_S = 180
IDLE_TARGET_PCT = 1.0  # of one core
WARMUP_S = 5.0  # before the idle window: the scheduler, the KB watch and the first plan start
#: peak RSS beside the bare app on the sample KB (reported; the database stack alone exceeds it)
RSS_TARGET = 1.5


@dataclass
class StartFigures:
    label: str
    console_s: list[float] = field(default_factory=list)
    console_records_s: list[float] = field(default_factory=list)
    bare_s: list[float] = field(default_factory=list)
    console_rss_mib: list[float] = field(default_factory=list)
    bare_rss_mib: list[float] = field(default_factory=list)
    target: float = 1.3
    records_target: float | None = None  # dashboard complete vs the bare app's paint

    @property
    def ratio(self) -> float:
        return statistics.median(self.console_s) / statistics.median(self.bare_s)

    @property
    def records_ratio(self) -> float:
        return statistics.median(self.console_records_s) / statistics.median(self.bare_s)

    @property
    def rss_ratio(self) -> float:
        return max(self.console_rss_mib) / max(self.bare_rss_mib)


@dataclass
class LatencyFigures:
    app_ms: list[float] = field(default_factory=list)
    raw_ms: list[float] = field(default_factory=list)


# -- KBs -------------------------------------------------------------------------------------
def generate_kb(root: Path, goals: int, workers: int) -> None:
    """A KB of ``goals`` x ``workers`` with daily cron schedules spread over the day."""
    root.mkdir(parents=True)
    (root / "goalsui.yaml").write_text('runner:\n  command: ["true"]\n', encoding="utf-8")
    for g in range(goals):
        goal_id = f"bench-goal-{g:04d}-{g:08x}"
        d = root / goal_id
        (d / "log").mkdir(parents=True)
        (d / "reports").mkdir()
        (d / "definition.yaml").write_text(
            f"goal_id: {goal_id}\nname: Bench goal {g}\ntask: benchmark\nowner: bench\n"
            f"status: active\nsort_order: {g}\ncreated_at: '2026-12-01T09:00:00+00:00'\n",
            encoding="utf-8",
        )
        (d / "protocol.md").write_text("# protocol\n", encoding="utf-8")
        (d / "state.yaml").write_text("plan: []\n", encoding="utf-8")
        for w in range(workers):
            wd = d / "workers" / f"w{w}"
            (wd / "inbox").mkdir(parents=True)
            (wd / "outbox").mkdir()
            (wd / "definition.yaml").write_text(
                f'schedule:\n  cron: "{(g * 7 + w * 11) % 60} {(g + w) % 24} * * *"\n'
                '  timezone: Europe/Berlin\nrunner:\n  command: ["true"]\ntimeout: 1m\n',
                encoding="utf-8",
            )
            (wd / "prompt.md").write_text(f"# w{w}\n\nDo one small thing.\n", encoding="utf-8")


def prepare(root: Path, *, large: tuple[int, int] | None) -> tuple[Path, Path]:
    """A KB and its state folder with the index synced (so start-up measures the console)."""
    from goalsui.bundled import find_sample_kb
    from goalsui.demo import load_demo_records
    from goalsui.service import Service

    kb, state = root / "kb", root / "state"
    if large is None:
        shutil.copytree(find_sample_kb(), kb)
    else:
        generate_kb(kb, *large)
    service = Service.open(kb, None, state)
    if large is None:
        load_demo_records(service)
    service.close()
    return kb, state


# -- start-up in a pseudo-terminal ------------------------------------------------------------
def run_in_pty(argv: list[str], marker: Path, env: dict[str, str]) -> dict[str, float]:
    """The child's marks (``<name>_t``, ``<name>_rss_kb``) as seconds since the spawn
    and MiB (``<name>_s``, ``<name>_rss_mib``)."""
    marker.unlink(missing_ok=True)
    child = PtyChild(argv, env)
    try:
        child.process.wait(START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.process.kill()
        child.process.wait()
        raise RuntimeError(f"{argv[2:5]} did not paint within {START_TIMEOUT_S}s") from None
    finally:
        child.stop()  # it has exited: closes the terminal and joins the reader
    if not marker.exists():
        raise RuntimeError(
            f"{' '.join(argv[:6])} exited ({child.process.returncode}) without painting:\n"
            f"{child.shown()}"
        )
    data = json.loads(marker.read_text())
    names = [key[:-2] for key in data if key.endswith("_t")]
    seconds = {f"{name}_s": data[f"{name}_t"] - child.started for name in names}
    return seconds | {f"{name}_rss_mib": data[f"{name}_rss_kb"] / 1024 for name in names}


def bytecode_env(tmp: Path) -> dict[str, str]:
    """Environment for the measured processes: bytecode cached under ``tmp``."""
    if os.environ.get("GOALSUI_BENCH_NO_BYTECODE") == "1":
        return {}
    return {"PYTHONPYCACHEPREFIX": str(tmp / "pycache")}


def measure_start(
    figures: StartFigures, kb: Path, state: Path, shape: tuple[int, int], repeat: int, tmp: Path
) -> None:
    """Start-up of the console on ``kb`` beside the bare app of ``shape`` (goals, workers)."""
    marker = tmp / f"paint-{len(figures.label)}.json"
    console = [*goalsui_argv(kb, state, "console"), "--no-scheduler"]
    bare = [sys.executable, "-m", "goalsui.bench.bare_app", *map(str, shape), str(marker)]
    env = bytecode_env(tmp)
    console_env = {**env, "GOALSUI_BENCH_FIRST_PAINT": str(marker)}
    run_in_pty(bare, marker, env)  # warm-up: bytecode written, files in the page cache
    run_in_pty(console, marker, console_env)
    for _ in range(repeat):  # interleaved, so both see the same machine load
        marks = run_in_pty(bare, marker, env)
        figures.bare_s.append(marks["paint_s"])
        figures.bare_rss_mib.append(marks["paint_rss_mib"])
        marks = run_in_pty(console, marker, console_env)
        figures.console_s.append(marks["paint_s"])
        figures.console_records_s.append(marks["records_s"])
        # the peak once the service is open: the console as it runs, not its first frame
        figures.console_rss_mib.append(marks["serving_rss_mib"])


# -- idle CPU --------------------------------------------------------------------------------
@dataclass
class IdleFigures:
    seconds: float
    console_pct: float
    bare_pct: float

    @property
    def ok(self) -> bool:
        return self.console_pct <= IDLE_TARGET_PCT


def quiet_kb(kb: Path, state: Path, window_s: float) -> None:
    """Pause every intent that would fire during the measurement."""
    from goalsui.service import Service

    with closing(Service.open(kb, None, state)) as service:
        horizon = service.now() + timedelta(seconds=window_s + WARMUP_S + 120)
        for intent in service.intents.list(status="active"):
            if intent.next_run_at is None or intent.next_run_at <= horizon:
                service.intents.pause(saved_id(intent))


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
        before, started = cpu_seconds(child.process.pid), time.monotonic()
        time.sleep(window_s)
        child.check_alive()
        used, took = cpu_seconds(child.process.pid) - before, time.monotonic() - started
    finally:
        child.stop(signal.SIGKILL)
    return 100.0 * used / took


def measure_idle(kb: Path, state: Path, window_s: float, tmp: Path) -> IdleFigures:
    """Idle CPU of the console on the sample KB beside the bare app of its shape (4 x 3)."""
    quiet_kb(kb, state, window_s)
    marker, env = tmp / "idle.json", bytecode_env(tmp)
    bare = [sys.executable, "-m", "goalsui.bench.bare_app", "4", "3", str(marker), "stay"]
    bare_pct = idle_share(bare, marker, env, window_s)
    console_env = {**env, "GOALSUI_BENCH_FIRST_PAINT": str(marker)}
    console_pct = idle_share(goalsui_argv(kb, state, "console"), marker, console_env, window_s)
    return IdleFigures(window_s, console_pct, bare_pct)


# -- refresh latency --------------------------------------------------------------------------
def _note_marks(text: str, seen: dict[str, float], at: float) -> None:
    """Note ``at`` as the first sighting of each bench mark in ``text``."""
    for line in text.splitlines():
        if line.startswith("bench-mark-"):
            seen.setdefault(line, at)


async def _raw_watch(kb: Path, prompt: Path, stop: asyncio.Event, seen: dict[str, float]) -> None:
    """Note when raw ``watchfiles.awatch`` first sees each bench mark in ``prompt``."""
    from watchfiles import awatch

    async for changes in awatch(kb, step=50, stop_event=stop):
        now = time.perf_counter()
        if any(path.endswith("prompt.md") for _, path in changes):
            _note_marks(prompt.read_text(encoding="utf-8"), seen, now)


async def _show_prompt(app: Any, pilot: Any, goal_id: str, rel: str) -> None:
    """Wait for the console's watcher, then select the worker until its prompt is shown."""
    deadline = time.monotonic() + 60
    while app.runtime.watcher is None or not app.runtime.watcher.healthy or app.dashboard is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the console's watcher did not start")
        await pilot.pause(0.05)
    deadline = time.monotonic() + 30
    while app.main.detail.current is None or app.main.detail.current.rel != rel:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the detail pane never showed {goal_id}/{rel}")
        node = app.main.goals.goal_nodes.get(goal_id)
        if node is not None and not node.is_expanded:
            node.expand()
        app.main.goals.select_key(f"worker/{goal_id}/pulse")
        await pilot.pause(0.05)


async def _write_samples(
    prompt: Path, samples: int, shown: dict[str, float], raw_seen: dict[str, float]
) -> LatencyFigures:
    """Save ``prompt`` ``samples`` times, each with a new mark, and time both sightings."""
    figures = LatencyFigures()
    base = prompt.read_text(encoding="utf-8")
    for n in range(samples):
        mark = f"bench-mark-{n}"
        tmp = prompt.with_name(f".prompt.md.bench{n}.tmp")
        tmp.write_text(f"{base}\n{mark}\n", encoding="utf-8")
        written = time.perf_counter()
        os.replace(tmp, prompt)  # how editors save: temp file, then rename
        deadline = time.monotonic() + 10
        while mark not in shown or mark not in raw_seen:
            if time.monotonic() > deadline:
                raise RuntimeError(f"write {n} was not seen within 10 s")
            await asyncio.sleep(0.002)
        figures.app_ms.append((shown[mark] - written) * 1000)
        figures.raw_ms.append((raw_seen[mark] - written) * 1000)
        await asyncio.sleep(0.25)
    prompt.write_text(base, encoding="utf-8")
    return figures


async def _latency(kb: Path, state: Path, samples: int) -> LatencyFigures:
    from goalsui.service import Service
    from goalsui.tui.app import make_app

    service = Service.open(kb, None, state, sync=False)
    goal_id, rel = "demo-pulse-05c0f5ca", "workers/pulse/prompt.md"
    prompt = kb / goal_id / rel
    app = make_app(service, scheduler=False, watch=True)
    shown: dict[str, float] = {}
    raw_seen: dict[str, float] = {}

    app.detail_listeners.append(lambda tab, text: _note_marks(text, shown, time.perf_counter()))
    stop = asyncio.Event()
    async with app.run_test(size=(COLS, ROWS)) as pilot:
        await _show_prompt(app, pilot, goal_id, rel)
        raw = asyncio.create_task(_raw_watch(kb, prompt, stop, raw_seen))
        await asyncio.sleep(0.5)
        figures = await _write_samples(prompt, samples, shown, raw_seen)
        stop.set()
        await asyncio.wait_for(raw, 5)
    service.close()
    return figures


# -- report -----------------------------------------------------------------------------------
def _line(label: str, *cells: str, verdict: bool | None = None) -> str:
    """A report line: the label, then up to four cells right-aligned (the figure, its reference,
    the ratio, the target), then the verdict."""
    text = f"{label:<34}" + "".join(
        f"{c:>{w}}" for c, w in zip(cells, (10, 10, 8, 9), strict=False)
    )
    return text if verdict is None else f"{text}  {'ok' if verdict else 'MISSED'}"


def _start_lines(title: str, starts: list[StartFigures], records: bool) -> tuple[list[str], bool]:
    """Start to first paint (or to dashboard complete), beside the bare app's paint."""
    ok = True
    lines = [_line(title, "console", "bare", "ratio", "target")]
    for f in starts:
        console = f.console_records_s if records else f.console_s
        ratio = f.records_ratio if records else f.ratio
        target = f.records_target if records else f.target
        cells = (f"{statistics.median(console):.3f}s", f"{statistics.median(f.bare_s):.3f}s")
        if target is None:
            lines.append(_line(f.label, *cells, f"{ratio:.2f}x"))
        else:
            ok &= ratio <= target
            lines.append(
                _line(f.label, *cells, f"{ratio:.2f}x", f"<={target:.1f}x", verdict=ratio <= target)
            )
    return lines, ok


def report(
    starts: list[StartFigures], latency: LatencyFigures, idle: IdleFigures | None = None
) -> tuple[str, bool]:
    fresh = os.environ.get("GOALSUI_BENCH_NO_BYTECODE") == "1"
    bytecode = "every module compiled at every start" if fresh else "bytecode cached, as installed"
    lines = [
        f"goalsui bench console ({COLS}x{ROWS} pseudo-terminal; {bytecode}; medians of the runs)",
        "",
    ]
    paint, ok = _start_lines("start to first paint", starts, records=False)
    complete, complete_ok = _start_lines("start to dashboard complete", starts, records=True)
    lines += [*paint, "", *complete, ""]
    # peak RSS of each child; the sample KB's target (issue 30) is reported, not gated on
    lines.append(_line("peak RSS (VmHWM of the child)", "console", "bare", "ratio", "target"))
    for i, f in enumerate(starts):
        rss = [f"{max(f.console_rss_mib):.1f}MiB", f"{max(f.bare_rss_mib):.1f}MiB"]
        rss.append(f"{f.rss_ratio:.2f}x")
        if i:
            lines.append(_line(f.label, *rss, "(none)"))
        else:
            target = f"<={RSS_TARGET:.1f}x"
            lines.append(_line(f.label, *rss, target, verdict=f.rss_ratio <= RSS_TARGET))
    if idle is not None:
        lines += [
            "",
            _line(f"idle CPU over {idle.seconds:g}s (sample KB)", "console", "bare", "", "target"),
            _line(
                "share of one core, scheduler on",
                f"{idle.console_pct:.2f}%",
                f"{idle.bare_pct:.2f}%",
                "",
                f"<={IDLE_TARGET_PCT:g}%",
                verdict=idle.ok,
            ),
        ]
    app50, app95 = _pct(latency.app_ms, 0.5), _pct(latency.app_ms, 0.95)
    raw50, raw95 = _pct(latency.raw_ms, 0.5), _pct(latency.raw_ms, 0.95)
    refresh_ok = app95 <= raw95 + 50
    lines += [
        "",
        _line("prompt.md write -> refreshed pane", "p50", "p95"),
        _line("console detail pane", f"{app50:.1f}ms", f"{app95:.1f}ms"),
        _line("raw watchfiles.awatch (step 50)", f"{raw50:.1f}ms", f"{raw95:.1f}ms"),
        _line("target: p95 <= raw p95 + 50 ms", "", f"{raw95 + 50:.1f}ms", verdict=refresh_ok),
    ]
    ok = ok and complete_ok and refresh_ok and (idle is None or idle.ok)
    return "\n".join(lines), ok


def _measure_starts(
    args: argparse.Namespace, tmp: Path, say: Callable[[str], None]
) -> tuple[list[StartFigures], Path, Path]:
    """Start-up on the sample KB and a generated large KB; the sample KB and state too."""
    goals, workers = args.goals or 1000, args.workers or 5
    say("preparing the sample KB ...")
    sample = prepare(tmp / "sample", large=None)
    say(
        f"generating a KB of {goals} goals x {workers} workers and indexing it (slow, not measured) ..."
    )
    large = prepare(tmp / "large", large=(goals, workers))
    starts = [
        StartFigures("sample KB (4 goals, 11 workers)", target=1.3, records_target=1.5),
        StartFigures(f"large KB ({goals} goals x {workers} workers)", target=2.0),
    ]
    # the bare reference gets the same shape: 4 goals of about 3 workers each on the sample KB
    shapes = ((4, 3), (goals, workers))
    for figures, (kb, state), shape in zip(starts, (sample, large), shapes, strict=True):
        say(f"measuring start-up ({figures.label.split(' (')[0]}) ...")
        measure_start(figures, kb, state, shape, args.repeat or START_REPEAT, tmp)
    return starts, *sample


def main(args: argparse.Namespace) -> int:
    """Entry point of ``goalsui bench console``."""
    idle_s = 60.0 if args.idle_seconds is None else float(args.idle_seconds)
    with scratch_dir("goalsui-bench-console-") as tmp:
        say = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else print
        starts, sample_kb, sample_state = _measure_starts(args, tmp, say)
        say("measuring refresh latency ...")
        latency = asyncio.run(_latency(sample_kb, sample_state, args.samples or 20))
        idle = None
        if idle_s > 0:
            say(f"measuring idle CPU ({idle_s:g}s each, console and bare app) ...")
            idle_kb, idle_state = prepare(tmp / "idle", large=None)
            idle = measure_idle(idle_kb, idle_state, idle_s, tmp)
        text, ok = report(starts, latency, idle)
        start = [asdict(s) | {"ratio": s.ratio, "records_ratio": s.records_ratio} for s in starts]
        data = {"start": start, "latency": asdict(latency), "idle": idle and asdict(idle), "ok": ok}
        print(json.dumps(data, indent=2) if args.json else f"\n{text}")
        return 0
