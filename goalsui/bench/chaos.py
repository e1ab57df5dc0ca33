"""``goalsui bench chaos``: K real ``goalsui daemon`` processes on one PostgreSQL database, a steady
load of every kind of intent, and a fault every few seconds; then the invariants. Load: heartbeats,
checklists, DST cron, ``at`` intents and signed hook events, each turn a tagged real subprocess.
Faults: ``kill -9``, ``SIGSTOP`` past a lease, PostgreSQL restarts, dropped connections. Then
:func:`check` verifies the invariants (docs/operations.md)."""

from __future__ import annotations

import argparse
import bisect
import contextlib
import http.client
import itertools
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import DEVNULL, STDOUT
from typing import Any

from goalsui.bench import goalsui_argv
from goalsui.bench.scheduler import _progress
from goalsui.domain.records import saved_id
from goalsui.domain.states import FAILURE_RUNS, RunStatus
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.hooks import signing
from goalsui.scheduler.rules import advance
from goalsui.service import Service

KILL9, SIGSTOP, PG_RESTART, DROP = "kill -9", "SIGSTOP > lease", "pg restart", "dropped connection"
FAILURES = FAILURE_RUNS | {RunStatus.CANCELLED}
NOT_EXECUTED = frozenset({RunStatus.SKIPPED, RunStatus.MISSED})
SOURCE = "chaos"
SECRET_ENV = "GOALSUI_CHAOS_HOOK_SECRET"
TAG_ENV = "GOALSUI_CHAOS_TURN"
EPS = timedelta(milliseconds=50)
Row = dict[str, Any]  # a record, an intent or an event as the checks read it
#: Every session commits durably: a server tuned for tests (synchronous_commit=off) loses
#: acknowledged commits in an immediate shutdown, which no scheduler can survive.
DURABLE = (os.environ.get("PGOPTIONS", "") + " -c synchronous_commit=on").strip()
#: DST zones of the cron intents (Lord Howe moves by 30 minutes)
ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Auckland",
    "Asia/Tehran",
)
#: The turns: (name, sh script, timeout seconds)
TURNS = (
    ("ok", "sleep 0.2", 10),
    ("flaky", "sleep 0.2; [ $(( $$ % 5 )) -ne 0 ]", 10),
    ("slow", "if [ $(( $$ % 4 )) -eq 0 ]; then sleep 30; fi; sleep 0.2", 2),
    ("child", "sleep 300 & sleep 0.3", 10),
)


# -- the daemons -----------------------------------------------------------------------------------
class Daemon:
    """One scheduler slot: a ``goalsui daemon`` process, restarted after ``kill -9``."""

    def __init__(self, k: int, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.k, self.argv, self.env, self.log = k, argv, env, log
        self.until = 0.0  # monotonic time of the pending restart or SIGCONT
        self.pids: list[int] = []
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdout=out, stderr=STDOUT, stdin=DEVNULL
            )
        self.pids.append(self.proc.pid)
        self.state = "running"  # running | stopped | dead

    def ready(self) -> bool:
        text = self.log.read_text(errors="replace")
        return text.count("goalsui daemon:") >= len(self.pids)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)

    def kill9(self, pause: float) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.state, self.until = "dead", time.monotonic() + pause

    def stop(self, seconds: float) -> None:
        self.signal(signal.SIGSTOP)
        self.state, self.until = "stopped", time.monotonic() + seconds

    def heal(self, now: float, force: bool = False) -> None:
        """Restart a killed daemon, or continue a stopped one, when its pause is over."""
        if self.state == "running" or (now < self.until and not force):
            return
        if self.state == "stopped":
            self.signal(signal.SIGCONT)
            self.state = "running"
        else:
            self.start()

    def terminate(self, timeout: float = 60.0) -> int | None:
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            return None


# -- PostgreSQL ------------------------------------------------------------------------------------
class Postgres:
    """The shared database: an admin connection and, with ``--pg-dir``, ``pg_ctl restart``."""

    def __init__(self, url: str, pg_dir: Path | None) -> None:
        scheme, sep, rest = url.partition("://")  # postgresql+psycopg:// as libpq takes it
        if not sep or not scheme.startswith(("postgresql", "postgres")):
            raise ValidationError("bench chaos: --db must be a PostgreSQL URL (postgresql://...)")
        self.url = "postgresql://" + rest
        self.data = _data_dir(pg_dir) if pg_dir is not None else None
        self._conn: Any = None
        self.restarts: Counter[str] = Counter()

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """The rows of ``sql``; (re)connects and retries for two minutes (a restart, a drop)."""
        import psycopg

        for _ in range(240):
            with contextlib.suppress(psycopg.Error):
                if self._conn is None or self._conn.closed or self._conn.broken:
                    self._conn = psycopg.connect(
                        self.url, autocommit=True, application_name="goalsui-chaos-bench"
                    )
                return list(self._conn.execute(sql, params).fetchall())
            self._conn = None
            time.sleep(0.5)
        raise GoalsuiError("bench chaos: the database does not answer")

    def terminate_one(self, app: str, rng: random.Random) -> bool:
        sql = "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()"
        pids = [r[0] for r in self.query(sql, (app,))]
        if not pids:
            return False
        rows = self.query("SELECT pg_terminate_backend(%s)", (rng.choice(pids),))
        return bool(rows and rows[0][0])

    def restart(self) -> None:
        """``pg_ctl restart`` (fast, then immediate, alternately), counted per mode."""
        assert self.data is not None
        mode = ("fast", "immediate")[sum(self.restarts.values()) % 2]
        pg_ctl = _pg_ctl(self.data)
        cmd = [pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "120", "restart"]
        cmd += ["-l", str(self.data / "goalsui-chaos-server.log")]
        res = subprocess.run(
            _as_owner(cmd, self.data), capture_output=True, text=True, timeout=180, check=False
        )
        if res.returncode != 0:
            raise GoalsuiError(f"bench chaos: pg_ctl restart failed: {res.stderr.strip()[-300:]}")
        self.restarts[mode] += 1
        self._conn = None


def _data_dir(pg_dir: Path) -> Path:
    """The server's data directory: ``DIR`` or ``DIR/data`` (tests/pgserver.py's layout)."""
    for cand in (pg_dir, pg_dir / "data"):
        if (cand / "PG_VERSION").exists() and (cand / "postmaster.pid").exists():
            return cand
    raise ValidationError(
        f"--pg-dir {pg_dir}: no running PostgreSQL data directory there (nor in its data/)"
    )


def _pg_ctl(data: Path) -> str:
    """The pg_ctl beside the running server's ``postgres`` binary (postmaster.opts)."""
    opts = (data / "postmaster.opts").read_text().split()
    if opts:
        cand = Path(opts[0].strip("'\"")).with_name("pg_ctl")
        if cand.exists():
            return str(cand)
    found = shutil.which("pg_ctl")
    if found is None:
        raise ValidationError("--pg-dir: pg_ctl not found")
    return found


def _as_owner(cmd: list[str], data: Path) -> list[str]:
    """Run as the data directory's owner (PostgreSQL refuses root)."""
    uid = data.stat().st_uid
    if os.geteuid() == uid:
        return cmd
    if os.geteuid() != 0:
        raise ValidationError(
            f"--pg-dir: {data} belongs to another user; run the bench as its owner"
        )
    return ["runuser", "-u", pwd.getpwuid(uid).pw_name, "--", *cmd]


# -- the load --------------------------------------------------------------------------------------
@dataclass
class Load:
    """What the bench created and sent, for the checks."""

    svc: Service
    tag: str  # in every turn's environment
    intents: dict[int, Row] = field(default_factory=dict)  # id -> kind, schedule...
    deliveries: dict[str, str] = field(default_factory=dict)  # delivery id -> accepted|pending

    def add(self, kind: str, title: str, turn: int, **fields: Any) -> None:
        """An intent whose turn is ``TURNS[turn]``, noted for the checks."""
        name, script, timeout = TURNS[turn % len(TURNS)]
        intent = self.svc.intents.create(
            title=f"{title} ({name})",
            kind=kind,
            instruction="chaos",
            runner={"command": ["env", f"{TAG_ENV}={self.tag}", "sh", "-c", script]},
            timeout=timeout,
            **fields,
        )
        self.intents[saved_id(intent)] = dict(
            kind=kind, schedule=intent.schedule, timezone=intent.timezone, first=intent.next_run_at
        )


def create_intents(load: Load, rate: float) -> None:
    """The standing intents (heartbeats, checklists, cron, events), scaled by ``rate``."""
    scale = rate / 10_000
    add = load.add

    for k in range(max(1, round(12 * scale))):
        add("heartbeat", f"every {k}", k, schedule="10s")
    for k in range(max(1, round(6 * scale))):
        add("heartbeat", f"checklist {k}", k, schedule="15s", checklist="- [ ] look at the queue")
    add("heartbeat", "empty checklist", 0, schedule="15s", checklist="")
    later = datetime.now(UTC) + timedelta(hours=6)
    quiet = {"start": f"{later:%H:%M}", "end": f"{later + timedelta(hours=1):%H:%M}"}
    add("heartbeat", "quiet hours", 0, schedule="15s", active_hours={**quiet, "timezone": "UTC"})
    for k in range(max(1, round(12 * scale))):
        add("cron", f"cron {k}", k, schedule="* * * * *", timezone=ZONES[k % len(ZONES)])
    for k in range(4):
        add("event", f"event {k}", k, event_source=SOURCE)


class Sender:
    """Signed hook deliveries to one daemon; a failed one is sent again (same delivery id)."""

    def __init__(self, port: int, secret: str, load: Load) -> None:
        self.port, self.secret, self.load = port, secret, load
        self.retry: list[tuple[str, bytes]] = []
        self.n = 0

    def post(self, delivery: str, body: bytes) -> bool:
        headers = signing.signed_headers(self.secret, body, delivery)  # JSON content type too
        try:
            with contextlib.closing(http.client.HTTPConnection("127.0.0.1", self.port, 5)) as conn:
                conn.request("POST", f"/hooks/{SOURCE}", body=body, headers=headers)
                status = conn.getresponse().status
        except OSError:
            status = 0
        if status in (200, 201, 202, 409):  # stored now, or before (a retry of a lost answer)
            self.load.deliveries[delivery] = "accepted"
            return True
        self.load.deliveries.setdefault(delivery, "pending")
        return False

    def send_new(self) -> None:
        self.n += 1
        delivery = f"chaos-{secrets.token_hex(6)}-{self.n}"
        body = json.dumps({"n": self.n}).encode()
        if not self.post(delivery, body):
            self.retry.append((delivery, body))

    def resend(self) -> None:
        self.retry = [(d, body) for d, body in self.retry if not self.post(d, body)]


# -- the run ---------------------------------------------------------------------------------------
@dataclass
class Options:
    db: str
    pg_dir: Path | None
    daemons: int
    minutes: float
    fault_every: float
    rate: float
    lease: float
    settle: float
    seed: int


@dataclass
class Result:
    options: dict[str, Any]
    faults: dict[str, int] = field(default_factory=dict)
    skipped_kinds: list[str] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    triggers: dict[str, int] = field(default_factory=dict)
    intents: dict[str, int] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def violated(self, name: str, n: int = 0, example: str | None = None) -> None:
        """``n`` violations of invariant ``name`` (up to five examples kept)."""
        self.violations[name] = self.violations.get(name, 0) + n
        if example is not None and n:
            examples = self.examples.setdefault(name, [])
            if len(examples) < 5:
                examples.append(example)

    def check(self, name: str, n: int) -> None:
        """``n`` more cases of invariant ``name`` were checked."""
        self.checked[name] = self.checked.get(name, 0) + n
        self.violated(name)


def run(opts: Options) -> Result:
    pg = Postgres(opts.db, opts.pg_dir)  # checks the URL and --pg-dir first
    result = Result(options={k: str(v) for k, v in opts.__dict__.items()})
    kinds = [KILL9, SIGSTOP, DROP]
    if opts.pg_dir is not None:
        kinds.insert(2, PG_RESTART)
    else:
        result.skipped_kinds.append(PG_RESTART)
        result.notes.append("no --pg-dir: PostgreSQL restarts were not injected")
    tmp = Path(tempfile.mkdtemp(prefix="goalsui-chaos-"))
    daemons: list[Daemon] = []
    try:
        kb, state = tmp / "kb", tmp / "state"
        kb.mkdir()
        (kb / "goalsui.yaml").write_text(
            f"hooks:\n  sources:\n    {SOURCE}:\n      secret_env: {SECRET_ENV}\n"
        )
        os.environ["PGOPTIONS"] = DURABLE  # the bench's own sessions (intents, events)
        with contextlib.closing(Service.open(kb, opts.db, state, actor="bench", sync=False)) as svc:
            if svc.bulk.count_intents():
                raise ValidationError(
                    f"bench chaos: the database at {svc.db_url_display()} is not empty; "
                    "use an empty scratch database"
                )
            load = Load(svc, tag=f"chaos-{secrets.token_hex(8)}")
            create_intents(load, opts.rate)
            secret = secrets.token_hex(16)
            hooks_port = _free_port()
            _start_daemons(opts, kb, state, secret, hooks_port, daemons)
            sender = Sender(hooks_port, secret, load)
            _progress(
                f"{opts.daemons} daemons, {len(load.intents)} standing intents, faults every "
                f"{opts.fault_every:g}s for {opts.minutes:g} min: {', '.join(kinds)}"
            )
            fault_end = _storm(opts, kinds, daemons, pg, load.add, sender, result)
            _progress(f"faults over; every daemon healthy again; settling {opts.settle:g}s")
            for d in daemons:
                d.heal(time.monotonic(), force=True)
            settle_until = time.monotonic() + opts.settle
            while time.monotonic() < settle_until:
                sender.resend()
                time.sleep(0.5)
            horizon = fault_end + timedelta(seconds=opts.settle / 2)
            live = {d.proc.pid for d in daemons if d.proc.poll() is None}
            orphaned = _running_without_owner(pg, live)
            _progress("stopping the daemons (SIGTERM)")
            codes = [d.terminate() for d in daemons]
            if any(c not in (0, None) for c in codes):
                result.notes.append(f"daemon exit codes {codes}")
            time.sleep(1.0)
            check(result, pg, load, horizon, orphaned)
            if result.ok:
                with contextlib.suppress(Exception):
                    svc.bulk.clear()
            else:
                result.notes.append(f"records kept for inspection in {svc.db_url_display()}")
    finally:
        for d in daemons:
            with contextlib.suppress(Exception):
                d.terminate(timeout=10)
        if result.ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            result.notes.append(f"KB, state and daemon logs kept in {tmp}")
    return result


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


def _start_daemons(
    opts: Options, kb: Path, state: Path, secret: str, hooks_port: int, daemons: list[Daemon]
) -> None:
    """Start the daemons into ``daemons`` (so that the caller stops them if one fails)."""
    for k in range(opts.daemons):
        argv = goalsui_argv(kb, state, "daemon", "--lease-seconds", f"{opts.lease:g}", db=opts.db)
        argv += ["--max-concurrency", "32", "--grace-seconds", "1", "--poll-interval", "0.5"]
        if k == 0:
            argv += ["--hooks-port", str(hooks_port)]
        env = {"GOALSUI_MCP_WARM": "0", **os.environ, "PGOPTIONS": DURABLE, SECRET_ENV: secret}
        env.update(PGAPPNAME=f"goalsui-chaos-d{k + 1}", PYTHONUNBUFFERED="1")
        env.pop(TAG_ENV, None)
        daemons.append(Daemon(k + 1, argv, env, kb.parent / f"daemon-{k + 1}.log"))
    deadline = time.monotonic() + 120
    while not all(d.ready() for d in daemons):
        for d in daemons:
            if d.proc.poll() is not None:
                tail = d.log.read_text(errors="replace").strip().splitlines()[-3:]
                raise GoalsuiError(f"bench chaos: daemon {d.k} did not start: {' | '.join(tail)}")
        if time.monotonic() > deadline:
            raise GoalsuiError("bench chaos: the daemons did not start within 120 s")
        time.sleep(0.2)


def _storm(
    opts: Options,
    kinds: list[str],
    daemons: list[Daemon],
    pg: Postgres,
    add: Callable[..., None],
    sender: Sender,
    result: Result,
) -> datetime:
    """The fault period: load and faults; returns when it ended (UTC)."""
    rng = random.Random(opts.seed)
    scale = opts.rate / 10_000
    at_every, event_every = 3.0 / scale, 4.0 / scale
    # the faults: rounds of every kind once, each round in a random order
    deck = (kind for _ in itertools.count() for kind in rng.sample(kinds, len(kinds)))
    counts: Counter[str] = Counter()
    start = time.monotonic()
    end = start + opts.minutes * 60
    next_fault = start + min(opts.fault_every, 3.0)
    next_at, next_event, next_resend = start, start + 1.0, start + 2.0
    restart: Future[None] | None = None
    pool = ThreadPoolExecutor(1, "chaos-pg-restart")
    k = 0
    while (now := time.monotonic()) < end:
        for d in daemons:
            d.heal(now)
        if now >= next_at:
            next_at += at_every
            k += 1
            due = datetime.now(UTC) + timedelta(seconds=2)
            with contextlib.suppress(Exception):  # the database restarting: the next one
                add("at", f"at {k}", k, schedule=due.isoformat())
        if now >= next_event:
            next_event += event_every
            sender.send_new()
        if now >= next_resend:
            next_resend += 2.0
            sender.resend()
        if now >= next_fault and (restart is None or restart.done()):
            next_fault += opts.fault_every
            kind = next(deck)
            if _inject(kind, opts.lease, rng, daemons, pg):
                counts[kind] += 1
            if kind == PG_RESTART:
                restart = pool.submit(pg.restart)
        time.sleep(0.05)
    pool.shutdown(wait=False)
    with contextlib.suppress(TimeoutError):  # still restarting after 200 s: no note
        if restart is not None and (error := restart.exception(200)) is not None:
            result.notes.append(f"a PostgreSQL restart failed: {error}")
    restarts = {f"{PG_RESTART} ({mode})": n for mode, n in pg.restarts.items()}
    result.faults = {**counts, **restarts}
    return datetime.now(UTC)


def _inject(
    kind: str, lease: float, rng: random.Random, daemons: list[Daemon], pg: Postgres
) -> bool:
    """A daemon fault of ``kind`` (a PostgreSQL restart runs in a thread); False: none to fault."""
    running = [d for d in daemons if d.state == "running"]
    if kind == PG_RESTART or not running:  # restarts are counted per mode from pg.restarts
        return False
    if kind == KILL9:
        rng.choice(running).kill9(pause=rng.uniform(1.0, 3.0))
    elif kind == SIGSTOP:
        rng.choice(running).stop(lease + rng.uniform(1.0, 2.0))
    else:
        rng.shuffle(running)
        return any(pg.terminate_one(d.env["PGAPPNAME"], rng) for d in running)
    return True


# -- the checks ------------------------------------------------------------------------------------
EXPECTED = "every expected occurrence has a record (ran, skipped or missed)"
TWICE = "no occurrence fired twice"
RETRY = "no retry without a failure before it"
OVERLAP = "no two runs of one intent at once"
EVENTS = "every accepted hook delivery stored once"
STUCK = "no intent stuck in firing"
ORPHAN = "no run running without a live scheduler"
RUNNING = "no run running after the schedulers stopped"
SESSIONS = "no tool-server session left open"
PROCS = "no turn process alive (grandchildren included)"

_RUN_COLUMNS = (
    "id, intent_id, trigger, status, reason, planned_at, started_at, finished_at, event_id, owner"
)


def _running_without_owner(pg: Postgres, live: set[int]) -> list[str]:
    out = []
    for run_id, owner in pg.query("SELECT id, owner FROM intent_run WHERE status = 'running'"):
        try:
            pid = int(str(owner).rsplit(":", 2)[1])
        except (IndexError, ValueError):
            pid = -1
        if pid not in live:
            out.append(f"run {run_id} owner {owner}")
    return out


def check(result: Result, pg: Postgres, load: Load, horizon: datetime, orphaned: list[str]) -> None:
    runs = pg.query(f"SELECT {_RUN_COLUMNS} FROM intent_run ORDER BY id")
    keys = _RUN_COLUMNS.split(", ")
    records = [dict(zip(keys, r, strict=True)) for r in runs]
    result.runs = dict(Counter(r["status"] for r in records))
    result.triggers = dict(Counter(r["trigger"] for r in records))
    by_intent: dict[int, list[Row]] = defaultdict(list)
    for r in records:
        for key in ("planned_at", "started_at", "finished_at"):
            if r[key] is not None:
                r[key] = r[key].astimezone(UTC)
        by_intent[r["intent_id"]].append(r)
    intents = dict(pg.query("SELECT id, status FROM intent"))
    result.intents = dict(
        Counter(f"{load.intents.get(i, {}).get('kind', '?')} {x}" for i, x in intents.items())
    )
    events = _events(pg)
    for intent_id, info in load.intents.items():
        recs = by_intent.get(intent_id, [])
        kind = info["kind"]
        if kind in ("heartbeat", "cron"):
            _check_schedule(result, intent_id, info, recs, horizon)
        elif kind == "at":
            _check_at(result, intent_id, info, recs, horizon)
        elif kind == "event":
            _check_event(result, intent_id, recs, events, horizon)
        _check_retries_and_overlap(result, intent_id, recs)
    _check_deliveries(result, load, events)
    result.check(ORPHAN, result.runs.get("running", 0) + len(orphaned))
    result.violated(ORPHAN, len(orphaned), "; ".join(orphaned[:5]))
    running = "intent_run WHERE status = 'running'"
    for name, checked, what, where in (
        (STUCK, len(intents), "intents", "intent WHERE status = 'firing'"),
        (RUNNING, len(records), "runs", running),
        (SESSIONS, len(records), "runs", f"{running} AND tool_session IS NOT NULL"),
    ):
        found = pg.query(f"SELECT id FROM {where}")
        result.check(name, checked)
        result.violated(name, len(found), f"{what} {[r[0] for r in found[:10]]}")
    procs = tagged_processes(load.tag)
    result.check(PROCS, 1)
    result.violated(PROCS, len(procs), "; ".join(procs[:5]))


def _events(pg: Postgres) -> dict[int, Row]:
    sql = "SELECT id, delivery_id, received_at, matched_intent_ids FROM event WHERE source = %s"
    return {
        event_id: {"delivery": delivery, "received": at.astimezone(UTC), "matched": set(ids or [])}
        for event_id, delivery, at, ids in pg.query(sql, (SOURCE,))
    }


def _cover_end(r: Row) -> datetime:
    """The last occurrence a record covers (a claim coalesces all passed before it)."""
    planned: datetime = r["planned_at"]
    if r["status"] == RunStatus.MISSED or r["reason"] == "overlap":
        return planned
    started: datetime = r["started_at"]
    return max(planned, started)


def _exempt(recs: list[Row]) -> list[tuple[datetime, datetime]]:
    """Windows where a schedule may lack records: a retry chain, auto-disable, a pending retry."""
    spans = []
    open_at: datetime | None = None
    for r in sorted(recs, key=lambda r: (r["started_at"], r["id"])):
        if r["status"] in FAILURES:
            if open_at is None:
                open_at = (r["planned_at"] or r["started_at"]) + 2 * EPS
        elif r["trigger"] == "retry" and open_at is not None:
            spans.append((open_at, r["started_at"]))
            open_at = None
    if open_at is not None:
        spans.append((open_at, datetime.max.replace(tzinfo=UTC)))
    return spans


def _next_expected(
    kind: str, schedule: str, tz: str, o: datetime, exempt: list[tuple[datetime, datetime]]
) -> datetime | None:
    """The occurrence after ``o`` (a failure restarts the cadence at its retry; None: never)."""
    nxt = advance(kind, schedule, tz, o, o)
    for start, end in exempt:
        if nxt is None:
            return None
        if o - EPS <= start <= nxt:
            if end.year == 9999:
                return None
            nxt = advance(kind, schedule, tz, None, end, anchor=False)
    return nxt


def _check_schedule(
    v: Result, intent_id: int, info: Row, recs: list[Row], horizon: datetime
) -> None:
    own = sorted(
        (r for r in recs if r["trigger"] != "retry" and r["planned_at"] is not None),
        key=lambda r: (r["planned_at"], r["id"]),
    )
    spans: list[tuple[datetime, datetime]] = []
    prev_end: datetime | None = None
    for a in own:
        start = prev_end if a["trigger"] == "catch-up" and prev_end is not None else a["planned_at"]
        end = _cover_end(a)
        if prev_end is not None and a["planned_at"] <= prev_end - EPS:
            v.violated(
                TWICE,
                1,
                f"intent {intent_id}: run {a['id']} planned {a['planned_at']:%H:%M:%S.%f} inside the previous claim",
            )
        spans.append((start, end))
        prev_end = end if prev_end is None else max(prev_end, end)
    v.check(TWICE, len(own))
    exempt = _exempt(recs)
    starts = [s for s, _ in spans]
    kind, schedule, tz = info["kind"], info["schedule"], info["timezone"] or "UTC"
    o: datetime | None = info["first"]
    n = 0
    while o is not None and o <= horizon:
        n += 1
        i = bisect.bisect_right(starts, o + EPS) - 1
        if not (i >= 0 and o <= spans[i][1] + EPS):
            v.violated(
                EXPECTED, 1, f"intent {intent_id} ({kind} {schedule}): no record of {o:%H:%M:%S}"
            )
        o = _next_expected(kind, schedule, tz, o, exempt)
    v.check(EXPECTED, n)


def _check_at(v: Result, intent_id: int, info: Row, recs: list[Row], horizon: datetime) -> None:
    own = [r for r in recs if r["trigger"] != "retry"]
    if info["first"] is not None and info["first"] <= horizon:
        v.check(EXPECTED, 1)
        if not own:
            v.violated(EXPECTED, 1, f"at intent {intent_id}: no record")
    v.check(TWICE, len(own))
    if len(own) > 1:
        v.violated(TWICE, len(own) - 1, f"at intent {intent_id}: runs {[r['id'] for r in own]}")


def _check_event(
    v: Result, intent_id: int, recs: list[Row], events: dict[int, Row], horizon: datetime
) -> None:
    own = [r for r in recs if r["trigger"] != "retry"]
    per_event = Counter(r["event_id"] for r in own)
    v.check(TWICE, len(own))
    for event_id, n in per_event.items():
        if n > 1:
            v.violated(TWICE, n - 1, f"event intent {intent_id}: event {event_id} fired {n} times")
    last = max((e for e in per_event if e is not None), default=None)
    for event_id, e in events.items():
        if intent_id not in e["matched"] or e["received"] > horizon:
            continue
        v.check(EXPECTED, 1)
        # A later event that made the intent due before its claim coalesces this one.
        if last is None or last < event_id:
            v.violated(EXPECTED, 1, f"event intent {intent_id}: no run for event {event_id}")


def _check_retries_and_overlap(v: Result, intent_id: int, recs: list[Row]) -> None:
    failures = sum(1 for r in recs if r["status"] in FAILURES)
    retries = sum(1 for r in recs if r["trigger"] == "retry")
    v.check(RETRY, retries)
    if retries > failures:
        v.violated(
            RETRY, retries - failures, f"intent {intent_id}: {retries} retries, {failures} failures"
        )
    ran = sorted(
        (r for r in recs if r["status"] not in NOT_EXECUTED),
        key=lambda r: (r["started_at"], r["id"]),
    )
    v.check(OVERLAP, len(ran))
    for a, b in zip(ran, ran[1:], strict=False):
        if a["finished_at"] is None or b["started_at"] < a["finished_at"] - EPS:
            v.violated(OVERLAP, 1, f"intent {intent_id}: runs {a['id']} and {b['id']} at once")


def _check_deliveries(v: Result, load: Load, events: dict[int, Row]) -> None:
    stored = Counter(e["delivery"] for e in events.values())
    accepted = [d for d, s in load.deliveries.items() if s == "accepted"]
    v.check(EVENTS, len(accepted))
    for d in accepted:
        if stored.get(d, 0) != 1:
            v.violated(EVENTS, 1, f"delivery {d} stored {stored.get(d, 0)} times")
    unknown = set(stored) - set(load.deliveries)
    v.violated(EVENTS, len(unknown), f"deliveries never sent: {sorted(unknown)[:5]}")


def tagged_processes(tag: str) -> list[str]:
    """Processes whose environment carries the turn tag (``/proc/*/environ``)."""
    needle = f"{TAG_ENV}={tag}".encode()
    out = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to read
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append(f"pid {entry.name}: {cmd.strip()[:80]}")
    return out


# -- output ----------------------------------------------------------------------------------------
def render(r: Result) -> str:
    o = r.options
    lines = [
        f"goalsui bench chaos: {o['daemons']} daemons, {float(o['minutes']):g} min, a fault every "
        f"{float(o['fault_every']):g}s, lease {float(o['lease']):g}s, about {float(o['rate']):,.0f} fires an hour",
        "",
        f"{'fault':<34} {'injected':>8}",
    ]
    lines += [f"{kind:<34} {n:>8}" for kind, n in sorted(r.faults.items())]
    lines += [f"{kind:<34} {'skipped':>8}" for kind in r.skipped_kinds]
    fires = sum(n for s, n in r.runs.items() if s not in NOT_EXECUTED)
    lines += [
        "",
        f"fires (runs started) {fires:,}; records by status: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(r.runs.items())),
        "records by trigger: " + ", ".join(f"{k} {v:,}" for k, v in sorted(r.triggers.items())),
        "intents: " + ", ".join(f"{k} {v}" for k, v in sorted(r.intents.items())),
        "",
        f"{'invariant':<62} {'checked':>8} {'violations':>10}",
    ]
    for name, n in r.violations.items():
        lines.append(f"{name:<62} {r.checked.get(name, 0):>8} {n:>10}")
        lines += [f"    e.g. {ex}" for ex in r.examples.get(name, [])]
    lines += ["", "result: " + ("ok, 0 violations" if r.ok else "VIOLATIONS")]
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


def options(args: argparse.Namespace) -> Options:
    """The run's options (the command line requires --db and checks the ranges)."""
    pg_dir = Path(args.pg_dir) if args.pg_dir else None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    given = (args.daemons, args.minutes, args.fault_every, float(args.rate), args.lease_seconds)
    return Options(args.bench_db, pg_dir, *given, args.settle_seconds, seed)


def main(args: argparse.Namespace) -> int:
    result = run(options(args))
    data = {**result.__dict__, "ok": result.ok}
    print(json.dumps(data, indent=2, default=str) if args.json else render(result))
    return 0 if result.ok else 1
