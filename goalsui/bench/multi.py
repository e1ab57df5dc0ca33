"""``goalsui bench scheduler --daemons K``: K processes (``python -m goalsui.bench.multi``) each run a
Scheduler with the in-process no-op turn of :mod:`goalsui.bench.scheduler`; once all are ready, N
intents due at once are inserted. Measured: fires per second (due time to the last recorded run),
fire lateness p50/p99 as the workers report it, and exactly-once from the run records (duplicates:
extra ``ok`` runs of an intent; lost: intents without one)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import PIPE
from typing import Any

from goalsui.bench import scratch_dir
from goalsui.bench.scheduler import (
    _insert_at_intents,
    _pct,
    _phase_service,
    _progress,
    lateness_turn,
)
from goalsui.domain.states import RunStatus
from goalsui.errors import GoalsuiError
from goalsui.scheduler.heap import settle_heap
from goalsui.service import Service

MAX_CONCURRENCY = 1000  # no-op turns in flight at once in each process
WORKER_POLL = 0.2  # s: each worker sees the burst's rows before they are due (SQLite has no NOTIFY)


@dataclass
class WorkerReport:
    pid: int
    owner: str
    fires: int
    lateness: list[float]
    last_finish: float  # epoch seconds of the last run-finished event (0: none)


@dataclass
class MultiResult:
    intents: int
    daemons: int
    database: str
    fires_per_s: float = 0.0
    elapsed_s: float = 0.0
    lateness_p50_ms: float = 0.0
    lateness_p99_ms: float = 0.0
    runs_ok: int = 0
    duplicates: int = 0
    lost: int = 0
    workers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return self.duplicates == 0 and self.lost == 0

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["exactly_once"] = self.exactly_once
        data["turn"] = "in-process no-op (measures the scheduler, not a runner)"
        data["max_concurrency"] = MAX_CONCURRENCY
        return data


# -- the worker process ---------------------------------------------------------------------------
async def _worker(kb: Path, db_url: str, state: Path, max_concurrency: int) -> WorkerReport:
    """Run a Scheduler with a no-op turn until a line (or EOF) arrives on stdin."""
    from goalsui.scheduler import Scheduler

    service = Service.open(kb, db_url, state, actor="bench", sync=False)
    lateness: list[float] = []
    finished = [0, 0.0]
    noop = lateness_turn(lateness)

    def count(event: Any) -> None:
        if event.kind == "run-finished":
            finished[0] += 1
            finished[1] = time.time()

    scheduler = Scheduler(
        service, turn=noop, max_concurrency=max_concurrency, poll_interval=WORKER_POLL
    )
    scheduler.subscribe(count)
    with closing(service):
        await scheduler.start()
        settle_heap()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await scheduler.stop()
    return WorkerReport(os.getpid(), scheduler.owner, int(finished[0]), lateness, finished[1])


def worker_main(argv: list[str]) -> int:
    """``python -m goalsui.bench.multi KB DB_URL STATE_DIR MAX_CONCURRENCY``: one worker process."""
    kb, db_url, state, concurrency = argv
    report = asyncio.run(_worker(Path(kb), db_url, Path(state), int(concurrency)))
    print(json.dumps(asdict(report)), flush=True)
    return 0


# -- the coordinator ------------------------------------------------------------------------------
class _Worker:
    def __init__(self, kb: Path, db_url: str, state: Path, max_concurrency: int) -> None:
        state.mkdir(parents=True, exist_ok=True)
        # A file, not a pipe: a chatty worker never blocks. Closed in kill().
        self.err = tempfile.TemporaryFile("w+")  # noqa: SIM115
        argv = [sys.executable, "-m", "goalsui.bench.multi", str(kb), db_url, str(state)]
        argv.append(str(max_concurrency))
        self.proc = subprocess.Popen(argv, stdin=PIPE, stdout=PIPE, stderr=self.err, text=True)

    def _err_tail(self) -> str:
        self.err.seek(0)
        return (self.err.read().strip().splitlines() or ["no output"])[-1]

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the worker prints "ready" or exits
        if line.strip() != "ready":
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise GoalsuiError(f"bench: a worker process did not start: {self._err_tail()}")

    def finish(self) -> WorkerReport:
        out, _ = self.proc.communicate("stop\n", timeout=120)
        lines = out.strip().splitlines()
        if self.proc.returncode != 0 or not lines:
            raise GoalsuiError(f"bench: a worker process failed: {self._err_tail()}")
        return WorkerReport(**json.loads(lines[-1]))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.err.close()


def run_multi(n: int, db_url: str | None, daemons: int) -> MultiResult:
    workers: list[_Worker] = []
    with scratch_dir("goalsui-bench-multi-") as tmp:
        (tmp / "kb").mkdir()
        with _phase_service(tmp, db_url, "multi") as svc:  # cleared after the workers stop
            shown = f"SQLite (scratch file, {svc.store.dialect})"
            result = MultiResult(n, daemons, svc.db_url_display() if db_url else shown)
            try:
                _burst(svc, svc.db_url, tmp, workers, result)
            finally:
                for w in workers:
                    w.kill()
        return result


def _burst(svc: Service, url: str, tmp: Path, workers: list[_Worker], result: MultiResult) -> None:
    """Start the worker processes, insert the burst, wait for it and fill in ``result``."""
    n, daemons, kb, state = result.intents, result.daemons, tmp / "kb", tmp / "state"
    _progress(f"starting {daemons} scheduler process(es) on {result.database}")
    per = min(n, MAX_CONCURRENCY)
    workers.extend(_Worker(kb, url, state, per) for _ in range(daemons))
    for w in workers:
        w.wait_ready()
    lead = 1.0 + n / 10_000
    due = datetime.now(UTC) + timedelta(seconds=lead)
    _progress(f"{n} no-op intents due at once, {daemons} process(es) claiming")
    _insert_at_intents(svc, n, due)
    svc.changed("intents")  # PostgreSQL: NOTIFY wakes every worker at once
    if datetime.now(UTC) > due:
        result.notes.append("the insert ended after the due time: lateness includes it")
    deadline = time.monotonic() + lead + 60 + n / 100
    while svc.bulk.count_runs(RunStatus.OK) < n and time.monotonic() < deadline:
        time.sleep(0.1)
    reports = [w.finish() for w in workers]
    ok, ran, dup = svc.bulk.ok_run_counts()
    result.runs_ok, result.lost, result.duplicates = ok, n - ran, ok - ran
    if dup:
        result.notes.append(f"{dup} intents ran ok more than once")
    if result.lost:
        result.notes.append(f"{result.lost} of {n} intents have no ok run")
    lateness = [x for r in reports for x in r.lateness]
    last = max((r.last_finish for r in reports), default=0.0)
    result.elapsed_s = max(0.0, last - due.timestamp())
    result.fires_per_s = n / result.elapsed_s if result.elapsed_s > 0 and not result.lost else 0.0
    result.lateness_p50_ms = 1000 * _pct(lateness, 0.50)
    result.lateness_p99_ms = 1000 * _pct(lateness, 0.99)
    for k, r in enumerate(reports, 1):
        result.workers.append(
            {
                "daemon": k,
                "pid": r.pid,
                "owner": r.owner,
                "fires": r.fires,
                "lateness_p50_ms": 1000 * _pct(r.lateness, 0.50),
                "lateness_p99_ms": 1000 * _pct(r.lateness, 0.99),
            }
        )


def render(r: MultiResult) -> str:
    rows = [
        ("metric", "value"),
        ("fires per second", f"{r.fires_per_s:,.0f} ({r.intents} in {r.elapsed_s:.2f}s)"),
        ("lateness p50", f"{r.lateness_p50_ms:,.1f} ms"),
        ("lateness p99", f"{r.lateness_p99_ms:,.1f} ms"),
        ("runs ok", f"{r.runs_ok} of {r.intents}"),
        ("duplicates", str(r.duplicates)),
        ("lost", str(r.lost)),
        ("exactly once", "ok" if r.exactly_once else "FAILED"),
    ]
    width = max(len(a) for a, _ in rows)
    lines = [
        f"goalsui bench scheduler: {r.intents} intents due at once, {r.daemons} scheduler "
        f"process(es), {r.database}",
        f"turns: in-process no-op (measures the scheduler, not a runner); max concurrency "
        f"{min(r.intents, MAX_CONCURRENCY)} per process; fires per second: due time to the "
        "last run recorded",
        "",
    ]
    lines += [f"{a.ljust(width)}  {b}" for a, b in rows]
    lines += ["", "daemon  pid      fires  share  lateness p50  lateness p99"]
    for w in r.workers:
        share = 100 * w["fires"] / r.intents if r.intents else 0.0
        lines.append(
            f"{w['daemon']:<6}  {w['pid']:<7}  {w['fires']:>5}  {share:>4.0f}%  "
            f"{w['lateness_p50_ms']:>9,.1f} ms  {w['lateness_p99_ms']:>9,.1f} ms"
        )
    lines += [f"note: {note}" for note in r.notes]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """The ``--daemons K`` form of ``goalsui bench scheduler``; exit 1 unless exactly once."""
    # checked by the command line; the database: its own --db, else the global one
    result = run_multi(args.intents, args.bench_db or args.db, args.daemons)
    print(json.dumps(result.as_json(), indent=2) if args.json else render(result))
    return 0 if result.exactly_once else 1


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
