"""``goalsui bench scheduler``: the scheduler's fire rate, lateness and idle CPU, with references.

Every figure comes with a reference measured in the same run on the same machine:

- fires per second (claim + ``running`` run record + completion, all committed) for N
  no-op intents due at once, beside a raw ``sqlite3`` compare-and-set loop with one
  commit per claim (target: at least 0.8x of it);
- fire lateness p50/p99 for the same burst (turn invoked minus due time), beside
  APScheduler 3's in-memory ``AsyncIOScheduler`` with N date jobs due at once
  (target: p99 at most 1.0x; due evenly over the spread window, at most 1.5x);
- idle CPU with N future intents (target: under 0.05 % of a core), beside APScheduler
  idling with N far-future jobs;
- wake latency: while that scheduler idles, another process (``goalsui intent add``)
  adds an intent due now; the time from its creation to its turn (target: under 1 s).

Turns are an in-process no-op coroutine: this measures the scheduler, not a runner.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from goalsui.bench import goalsui_argv, scratch_dir
from goalsui.domain.states import RunStatus
from goalsui.errors import ValidationError
from goalsui.runners.base import TurnOutcome
from goalsui.scheduler.heap import settle_heap
from goalsui.service import Service

THROUGHPUT_TARGET = 0.8  # x the raw loop
LATENESS_TARGET = 1.0  # x APScheduler's p99, all due at once
SPREAD_TARGET = 1.5  # x APScheduler's p99, due over the spread window
IDLE_TARGET = 0.05  # % of one core
WAKE_TARGET_MS = 1000.0  # an intent added by another process, due now, fires within this
WAKE_TIMEOUT = 30.0  # seconds the wake row waits for the fire before it reports a miss
SETTLE_SECONDS = 0.5
DEFAULT_REPEAT = 3  # runs of the burst and the spread; their medians are reported
#: each target's rule as the JSON report says it
TARGET_RULES = {
    "throughput": f">= {THROUGHPUT_TARGET}x raw",
    "lateness_p99": f"<= {LATENESS_TARGET}x APScheduler",
    "lateness_spread_p99": f"<= {SPREAD_TARGET}x APScheduler",
    "idle_cpu": f"< {IDLE_TARGET} % of a core",
    "wake_latency": f"<= {WAKE_TARGET_MS:g} ms",
}


@dataclass
class BenchResult:
    intents: int
    database: str
    fires_per_s: float = 0.0
    raw_claims_per_s: float = 0.0
    lateness_p50_ms: float = 0.0
    lateness_p99_ms: float = 0.0
    aps_lateness_p50_ms: float = 0.0
    aps_lateness_p99_ms: float = 0.0
    aps_jobs_per_s: float = 0.0
    spread_seconds: float = 0.0
    spread_p50_ms: float = 0.0
    spread_p99_ms: float = 0.0
    aps_spread_p50_ms: float = 0.0
    aps_spread_p99_ms: float = 0.0
    idle_seconds: float = 0.0
    idle_cpu_pct: float = 0.0
    aps_idle_seconds: float = 0.0
    aps_idle_cpu_pct: float = 0.0
    wake_latency_ms: float = 0.0
    runs_ok: int = 0
    repeat: int = 1
    #: every burst run: {"fires_per_s": [...], "lateness_p99_ms": [...], ...} (medians above)
    runs: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def targets(self) -> dict[str, bool]:
        return {
            "throughput": self.fires_per_s >= THROUGHPUT_TARGET * self.raw_claims_per_s,
            "lateness_p99": self.lateness_p99_ms <= LATENESS_TARGET * self.aps_lateness_p99_ms,
            "lateness_spread_p99": self.spread_p99_ms <= SPREAD_TARGET * self.aps_spread_p99_ms,
            "idle_cpu": self.idle_cpu_pct < IDLE_TARGET,
            "wake_latency": 0 < self.wake_latency_ms <= WAKE_TARGET_MS,
        }

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["targets"] = {
            name: {"rule": TARGET_RULES[name], "met": met} for name, met in self.targets.items()
        }
        data["turn"] = "in-process no-op (measures the scheduler, not a runner)"
        data["max_concurrency"] = self.intents
        return data


def spread_window(n: int) -> float:
    """The window the spread lateness run uses: 1,000 fires a second, at least 2 s
    (docs/architecture.md: APScheduler measured with 1,000 jobs due within 2 s)."""
    return max(2.0, n / 1000)


def lead_seconds(n: int) -> float:
    """How far ahead of their due time the N intents (or APScheduler's N jobs) are set
    up: the same for both, so that neither starts cold (APScheduler adds ~10,000 jobs a
    second here; inserting 10,000 intents and starting the scheduler takes ~0.5 s)."""
    return 0.5 + n / 5_000


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _progress(text: str) -> None:
    sys.stderr.write(f"bench: {text}\n")
    sys.stderr.flush()


# -- setup ------------------------------------------------------------------------------------
def _due_times(n: int, start: datetime, spread: float) -> list[datetime]:
    """``n`` due times: all at ``start``, or evenly over ``spread`` seconds from it."""
    if spread <= 0:
        return [start] * n
    return [start + timedelta(seconds=spread * k / n) for k in range(n)]


def _insert_at_intents(
    service: Service, n: int, when: datetime, spread: float = 0.0
) -> list[datetime]:
    """``n`` one-shot intents due at ``when`` (or spread after it), in one transaction (Core)."""
    now = datetime.now(UTC)
    dues = _due_times(n, when, spread)
    rows = [
        {
            "title": f"bench {k}",
            "instruction": "",
            "kind": "at",
            "status": "active",
            "schedule": due.isoformat(),
            "timezone": "UTC",
            "next_run_at": due,
            "cooldown_s": 0,
            "fires": 0,
            "attempts": 0,
            "consecutive_failures": 0,
            "created_at": now,
            "updated_at": now,
        }
        for k, due in enumerate(dues)
    ]
    service.bulk.insert_intents(rows)
    return dues


def _check_empty(service: Service) -> None:
    count = service.bulk.count_intents()
    if count:
        raise ValidationError(
            f"bench: the database at {service.db_url_display()} already holds {count} intents; "
            "use an empty scratch database (or no --db for a temporary SQLite file)"
        )


# -- the scheduler ---------------------------------------------------------------------------
def lateness_turn(lateness: list[float]) -> Callable[..., Awaitable[TurnOutcome]]:
    """A no-op turn that notes how late it was invoked (now minus the planned time)."""

    async def noop(
        service: Service, intent: Any, run: Any, *, event: Any = None, cancel: Any = None
    ) -> TurnOutcome:
        if run.planned_at is not None:  # a scheduled fire always has its planned time
            lateness.append(time.time() - run.planned_at.timestamp())
        return TurnOutcome("ok")

    return noop


async def _measure_fires(
    service: Service, n: int, spread: float = 0.0
) -> tuple[float, list[float], int]:
    """N intents due at once (or over ``spread`` s): (fires per second, lateness s, runs ok)."""
    from goalsui.scheduler import Scheduler

    lateness: list[float] = []
    finished = 0
    done = asyncio.Event()
    last = [0.0]
    noop = lateness_turn(lateness)

    def count(event: Any) -> None:
        nonlocal finished
        if event.kind == "run-finished":
            finished += 1
            if finished >= n:
                last[0] = time.time()
                done.set()

    lead = lead_seconds(n)
    due = datetime.now(UTC) + timedelta(seconds=lead)
    _insert_at_intents(service, n, due, spread)
    # Every no-op turn may be in flight at once, as APScheduler runs every due job at once:
    # with fewer slots the scheduler could not claim a burst ahead of its due time.
    scheduler = Scheduler(service, turn=noop, max_concurrency=n)
    scheduler.subscribe(count)
    await scheduler.start()
    settle_heap()
    try:
        await asyncio.wait_for(done.wait(), timeout=lead + spread + 60 + n / 100)
    finally:
        await scheduler.stop()
    ok = service.bulk.count_runs(RunStatus.OK)
    elapsed = last[0] - due.timestamp()
    return n / elapsed if elapsed > 0 else 0.0, lateness, int(ok or 0)


async def _measure_idle(service: Service, n: int, seconds: float) -> tuple[float, float]:
    """CPU (% of one core) of this process while the scheduler idles with N future
    intents, then the wake latency (ms) of an intent another process adds, due now."""
    from goalsui.scheduler import Scheduler

    fired: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    async def noop(service: Service, intent: Any, run: Any, **_: Any) -> TurnOutcome:
        if intent.title == WAKE_TITLE and not fired.done() and intent.created_at is not None:
            fired.set_result(time.time() - intent.created_at.replace(tzinfo=UTC).timestamp())
        return TurnOutcome("ok")

    _insert_at_intents(service, n, datetime.now(UTC) + timedelta(days=1))
    scheduler = Scheduler(service, turn=noop)
    await scheduler.start()
    try:
        await asyncio.sleep(SETTLE_SECONDS)
        cpu = await _cpu_over(seconds)
        return cpu, await _wake_latency(service, fired)
    finally:
        await scheduler.stop()


WAKE_TITLE = "bench wake"


async def _wake_latency(service: Service, fired: asyncio.Future[float]) -> float:
    """``goalsui intent add --at <now>`` in a process of its own; ms from the intent's
    creation to its turn (0.0 if it did not fire within ``WAKE_TIMEOUT``)."""
    add = ["intent", "add", "--title", WAKE_TITLE, "--instruction", "wake"]
    at = ["--at", datetime.now(UTC).isoformat()]
    argv = goalsui_argv(service.kb.root, service.state_dir, *add, *at, db=service.db_url)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise ValidationError(f"bench: intent add failed: {err.decode(errors='replace')[:200]}")
    try:
        return 1000 * await asyncio.wait_for(fired, WAKE_TIMEOUT)
    except TimeoutError:
        return 0.0


async def _cpu_over(seconds: float) -> float:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return 100.0 * cpu / wall


# -- the references ---------------------------------------------------------------------------
def raw_sqlite_claims(path: Path, n: int) -> float:
    """Claims per second of a bare sqlite3 compare-and-set loop, one commit per claim."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE intent (id INTEGER PRIMARY KEY, status TEXT NOT NULL, next_run_at TEXT, "
        "lease_owner TEXT, lease_until TEXT)"
    )
    conn.execute("CREATE INDEX ix_due ON intent (status, next_run_at)")
    due = "2026-01-01 00:00:00"
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO intent (status, next_run_at) VALUES ('active', ?)", [(due,)] * n)
    conn.execute("COMMIT")
    now = "2026-01-01 00:00:01"
    start = time.perf_counter()
    claimed = 0
    for intent_id in range(1, n + 1):
        conn.execute("BEGIN IMMEDIATE")
        cur = conn.execute(
            "UPDATE intent SET status='firing', lease_owner=?, lease_until=? "
            "WHERE id=? AND status='active' AND next_run_at<=?",
            ("bench", "2026-01-01 00:00:31", intent_id, now),
        )
        claimed += cur.rowcount
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    assert claimed == n
    return n / elapsed


async def aps_lateness(n: int, spread: float = 0.0) -> tuple[list[float], float]:
    """APScheduler 3 in memory, N date jobs due at once (or over ``spread`` s): (lateness s, jobs/s)."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    lateness: list[float] = []
    done = asyncio.Event()
    last = [0.0]

    async def job(planned: float) -> None:
        lateness.append(time.time() - planned)
        if len(lateness) >= n:
            last[0] = time.time()
            done.set()

    aps = AsyncIOScheduler(timezone=UTC)
    aps.start()
    lead = lead_seconds(n)
    due = datetime.now(UTC) + timedelta(seconds=lead)
    for k, when in enumerate(_due_times(n, due, spread)):
        aps.add_job(
            job,
            "date",
            run_date=when,
            args=[when.timestamp()],
            id=f"j{k}",
            misfire_grace_time=None,
            coalesce=False,
        )
    try:
        await asyncio.wait_for(done.wait(), timeout=lead + spread + 60 + n / 100)
    finally:
        aps.shutdown(wait=False)
    elapsed = last[0] - due.timestamp()
    return lateness, n / elapsed if elapsed > 0 else 0.0


async def aps_idle(n: int, seconds: float) -> float:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    async def job() -> None:
        return None

    aps = AsyncIOScheduler(timezone=UTC)
    aps.start()
    far = datetime.now(UTC) + timedelta(days=1)
    for k in range(n):
        aps.add_job(job, "date", run_date=far, id=f"j{k}")
    try:
        await asyncio.sleep(SETTLE_SECONDS)
        return await _cpu_over(seconds)
    finally:
        aps.shutdown(wait=False)


# -- the run -------------------------------------------------------------------------------------
def _note(runs: dict[str, list[float]], key: str, value: float) -> None:
    runs.setdefault(key, []).append(value)


def _note_lateness(runs: dict[str, list[float]], prefix: str, lateness: list[float]) -> None:
    """The p50 and p99 of ``lateness`` (s) as ``<prefix>_p50_ms`` and ``<prefix>_p99_ms``."""
    _note(runs, f"{prefix}_p50_ms", 1000 * _pct(lateness, 0.50))
    _note(runs, f"{prefix}_p99_ms", 1000 * _pct(lateness, 0.99))


@contextlib.contextmanager
def _phase_service(tmp: Path, db_url: str | None, phase: str) -> Iterator[Service]:
    """A service on an empty database for one phase, emptied and closed after it."""
    url = db_url or f"sqlite:///{tmp / f'{phase}.db'}"
    with contextlib.closing(
        Service.open(tmp / "kb", url, tmp / "state", actor="bench", sync=False)
    ) as svc:
        _check_empty(svc)  # a database that holds data is never cleared
        try:
            yield svc
        finally:
            if db_url:
                svc.bulk.clear()


async def _burst_run(k: int, result: BenchResult, tmp: Path, db_url: str | None) -> None:
    """Run ``k`` of the burst (N intents due at once) beside the raw loop and APScheduler."""
    n, repeat, runs = result.intents, result.repeat, result.runs
    with _phase_service(tmp, db_url, f"fire{k}") as svc:
        result.database = (
            svc.db_url_display() if db_url else f"SQLite (scratch file, {svc.store.dialect})"
        )
        _progress(f"run {k + 1}/{repeat}: {n} no-op intents due at once on {result.database}")
        fires, lateness, ok = await _measure_fires(svc, n)
    if ok != n:
        result.notes.append(f"run {k + 1}: only {ok} of {n} runs were recorded ok")
    result.runs_ok = min(ok, result.runs_ok) if k else ok
    _note(runs, "fires_per_s", fires)
    _note_lateness(runs, "lateness", lateness)
    _progress(f"run {k + 1}/{repeat}: reference: raw sqlite3 compare-and-set loop")
    _note(runs, "raw_claims_per_s", raw_sqlite_claims(tmp / f"raw{k}.db", n))
    _progress(
        f"run {k + 1}/{repeat}: reference: APScheduler AsyncIOScheduler, date jobs due at once"
    )
    aps_late, aps_rate = await aps_lateness(n)
    _note_lateness(runs, "aps_lateness", aps_late)
    _note(runs, "aps_jobs_per_s", aps_rate)


async def _spread_run(k: int, result: BenchResult, tmp: Path, db_url: str | None) -> None:
    """Run ``k`` of the spread (N intents due evenly over the window) beside APScheduler."""
    n, repeat, runs, spread = result.intents, result.repeat, result.runs, result.spread_seconds
    _progress(f"run {k + 1}/{repeat}: {n} no-op intents due evenly over {spread:g}s")
    with _phase_service(tmp, db_url, f"spread{k}") as svc:
        _, lateness, _ = await _measure_fires(svc, n, spread)
    _note_lateness(runs, "spread", lateness)
    _progress(
        f"run {k + 1}/{repeat}: reference: APScheduler, date jobs due evenly over {spread:g}s"
    )
    aps_late, _ = await aps_lateness(n, spread)
    _note_lateness(runs, "aps_spread", aps_late)


async def _idle_run(
    result: BenchResult, tmp: Path, db_url: str | None, idle_seconds: float
) -> None:
    """Idle CPU and wake latency with N future intents, beside APScheduler idling."""
    n = result.intents
    _progress(f"idle CPU over {idle_seconds:g}s with {n} future intents")
    with _phase_service(tmp, db_url, "idle") as svc:
        result.idle_cpu_pct, result.wake_latency_ms = await _measure_idle(svc, n, idle_seconds)
        result.idle_seconds = idle_seconds
    if not result.wake_latency_ms:
        result.notes.append(f"the wake row's intent did not fire within {WAKE_TIMEOUT:g}s")
    ref_seconds = min(idle_seconds, 10.0)
    _progress(f"reference: APScheduler idle over {ref_seconds:g}s with {n} far-future jobs")
    result.aps_idle_cpu_pct = await aps_idle(n, ref_seconds)
    result.aps_idle_seconds = ref_seconds


async def run_bench(
    n: int,
    db_url: str | None,
    idle_seconds: float,
    spread: float | None = None,
    repeat: int = 1,
) -> BenchResult:
    with scratch_dir("goalsui-bench-") as tmp:
        (tmp / "kb").mkdir()
        result = BenchResult(intents=n, database="", repeat=repeat)
        result.spread_seconds = spread_window(n) if spread is None else spread
        for k in range(repeat):
            # Interleaved: each run beside its own references, so that the machine's drift
            # over the whole bench touches all of them alike.
            await _burst_run(k, result, tmp, db_url)
            # A few milliseconds at p99 either side: one run decides nothing, so the spread
            # row is repeated (and its median reported) like the burst.
            await _spread_run(k, result, tmp, db_url)
        for key, values in result.runs.items():
            setattr(result, key, statistics.median(values))
        await _idle_run(result, tmp, db_url, idle_seconds)
        return result


def _row(
    metric: str, value: str, reference: str, target: str = "", met: bool | None = None
) -> tuple[str, str, str, str, str]:
    """A row of the table; a row with a target says whether it was met."""
    return metric, value, reference, target, "" if met is None else "ok" if met else "MISSED"


def _lateness(
    metric: str, ms: float, aps_ms: float, factor: float = 0.0, met: bool | None = None
) -> tuple[str, str, str, str, str]:
    """A lateness row beside APScheduler's; with ``factor``, its target ``factor`` x APScheduler's."""
    target = f"<= {factor}x = {factor * aps_ms:,.1f} ms" if factor else ""
    return _row(metric, f"{ms:,.1f} ms", f"APScheduler {aps_ms:,.1f} ms", target, met)


def _rows(r: BenchResult) -> list[tuple[str, str, str, str, str]]:
    """The burst's fire rate and lateness, the spread's lateness, idle CPU and wake latency."""
    met, spread = r.targets, f"spread {r.spread_seconds:g}s"
    return [
        _row(
            "fires per second",
            f"{r.fires_per_s:,.0f}",
            f"raw sqlite3 CAS loop {r.raw_claims_per_s:,.0f}/s",
            f">= {THROUGHPUT_TARGET}x = {THROUGHPUT_TARGET * r.raw_claims_per_s:,.0f}",
            met["throughput"],
        ),
        _lateness("lateness p50, at once", r.lateness_p50_ms, r.aps_lateness_p50_ms),
        _lateness(
            "lateness p99, at once",
            r.lateness_p99_ms,
            r.aps_lateness_p99_ms,
            LATENESS_TARGET,
            met["lateness_p99"],
        ),
        _lateness(f"lateness p50, {spread}", r.spread_p50_ms, r.aps_spread_p50_ms),
        _lateness(
            f"lateness p99, {spread}",
            r.spread_p99_ms,
            r.aps_spread_p99_ms,
            SPREAD_TARGET,
            met["lateness_spread_p99"],
        ),
        _row(
            f"idle CPU ({r.idle_seconds:g}s)",
            f"{r.idle_cpu_pct:.3f} %",
            f"APScheduler {r.aps_idle_cpu_pct:.3f} % ({r.aps_idle_seconds:g}s)",
            f"< {IDLE_TARGET} % of a core",
            met["idle_cpu"],
        ),
        _row(
            "wake latency (intent add)",
            f"{r.wake_latency_ms:,.0f} ms",
            "another process adds an intent due now",
            f"<= {WAKE_TARGET_MS:,.0f} ms",
            met["wake_latency"],
        ),
    ]


def render(r: BenchResult) -> str:
    rows = [
        ("metric", "goalsui", "reference (same run)", "target", "result"),
        *_rows(r),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        f"goalsui bench scheduler: {r.intents} intents due at once, {r.database}",
        f"medians of {r.repeat} run(s) (burst and spread), each beside its references; "
        f"turns: in-process no-op (measures the scheduler, not a runner); max concurrency {r.intents:,} (all at once, as APScheduler); "
        "gc.freeze(), a young-generation threshold of 10,000 and a 0.2 ms GIL switch interval after start-up, as in goalsui daemon; "
        f"APScheduler ran {r.aps_jobs_per_s:,.0f} jobs/s",
        "",
    ]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines += [f"note: {note}" for note in r.notes]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Entry point of ``goalsui bench scheduler`` (the command line checks the options)."""
    repeat = DEFAULT_REPEAT if args.repeat is None else args.repeat
    db = args.bench_db or args.db  # its own --db, else the global one
    result = asyncio.run(
        run_bench(args.intents, db, args.idle_seconds, args.spread_seconds, repeat)
    )
    if args.json:
        sys.stdout.write(json.dumps(result.as_json(), indent=2) + "\n")
    else:
        print(render(result))
    return 0
