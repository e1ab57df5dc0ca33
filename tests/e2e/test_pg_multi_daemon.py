"""Three real ``goalsui daemon`` processes on one PostgreSQL database, one of them killed.

5,000 intents due at once plus a minute-long stream of new ones (service and CLI); one
daemon gets ``kill -9`` while it holds runs in flight; the survivors recover its expired
leases. Every intent must end with exactly one ``ok`` run, any other run of it
``interrupted``: zero duplicates, zero lost, nothing stuck.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from goalsui.domain.timeutil import utcnow
from goalsui.service import Service
from tests.daemon_kit import Daemon, add_due_now, runner_config, wait_until
from tests.e2e.test_kb_create import cli

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(420)]

BURST = 5000
STREAM_SECONDS = 60.0
STREAM_EVERY = 0.25  # seconds between two new intents from the service
CLI_EVERY = 15.0  # seconds between two new intents from `goalsui intent add`
LEASE = "5"  # seconds: short, so the survivors take over quickly


def pid_of(owner: str | None) -> int:
    """The pid in a scheduler owner ``host:pid:random``."""
    return int(str(owner).rsplit(":", 2)[1])


def cli_add(kb: Path, state: Path, db: str, title: str, at: str) -> int:
    """``goalsui intent add --at``: the id of the new intent."""
    res = cli(
        kb,
        state,
        "--db",
        db,
        "intent",
        "add",
        "--title",
        title,
        "--instruction",
        "x",
        "--at",
        at,
        "--json",
    )
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


class Stream:
    """New intents for ``seconds``, due now to 3 s ahead, from another thread."""

    def __init__(self, svc: Service, kb: Path, state: Path, db: str, seconds: float) -> None:
        self.svc, self.kb, self.state, self.db = svc, kb, state, db
        self.seconds = seconds
        self.ids: list[int] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join(self.seconds + 120)
        assert not self._thread.is_alive(), "the stream did not end"
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            start = time.monotonic()
            next_cli = start
            k = 0
            while time.monotonic() - start < self.seconds:
                due = utcnow() + timedelta(seconds=k % 4)
                if time.monotonic() >= next_cli:
                    next_cli += CLI_EVERY
                    self.ids.append(
                        cli_add(self.kb, self.state, self.db, f"cli {k}", due.isoformat())
                    )
                else:
                    intent = self.svc.intents.create(
                        title=f"stream {k}", instruction="x", kind="at", schedule=due.isoformat()
                    )
                    self.ids.append(int(intent.id))
                k += 1
                time.sleep(STREAM_EVERY)
        except BaseException as exc:  # noqa: BLE001 - re-raised in join()
            self.error = exc


def test_three_daemons_on_postgres_survive_a_kill_9_with_no_duplicate_and_none_lost(
    pg_db: str,
    empty_kb: Path,
    tmp_path: Path,
    make_service: Callable[..., Service],
    capsys: pytest.CaptureFixture[str],
) -> None:
    t0 = time.monotonic()
    state = tmp_path / "state"
    runner_config(empty_kb, ["true"])  # a real subprocess per run, as cheap as they come
    svc = make_service(empty_kb, pg_db)  # creates the schema
    stream_svc = make_service(empty_kb, pg_db)  # its own engine, used by the stream thread only
    options = ("--max-concurrency", "16", "--lease-seconds", LEASE, "--grace-seconds", "1")
    daemons = [Daemon(empty_kb, state, *options, db=pg_db) for _ in range(3)]
    victim = daemons[1]
    stream = Stream(stream_svc, empty_kb, state, pg_db, STREAM_SECONDS)
    in_flight: dict[int, int] = {}
    codes: list[int] = []
    try:
        for d in daemons:
            d.wait_ready()
        burst = add_due_now(svc, BURST)
        svc.changed("intents")  # NOTIFY: the daemons wake at once (they would poll anyway)
        stream.start()

        def done() -> int:
            return svc.overview.summary()["intents"].get("done", 0)

        def victim_running() -> list[int]:
            return [r.id for r in svc.runs.running() if pid_of(r.owner) == victim.pid]

        wait_until(lambda: done() >= BURST // 2, timeout=180, step=0.2)
        wait_until(lambda: bool(victim_running()), timeout=30, step=0.01)
        victim.kill()
        # What it held when it died: nobody may touch these rows until the lease expires.
        in_flight = {r.id: r.intent_id for r in svc.runs.running() if pid_of(r.owner) == victim.pid}
        stream.join()
        total = len(burst) + len(stream.ids)

        def settled() -> bool:
            summary = svc.overview.summary()
            return summary["intents"].get("done", 0) == total and summary["running"] == 0

        wait_until(settled, timeout=240, step=0.5)
    finally:
        codes = [d.stop() for d in daemons if d is not victim]
        if victim.proc.poll() is None:
            victim.kill()
    survivors = [d for d in daemons if d is not victim]
    assert codes == [0, 0], "\n".join(survivors[0].lines[-20:] + survivors[1].lines[-20:])

    ids = burst + stream.ids
    assert len(set(ids)) == len(ids) == BURST + len(stream.ids)
    intents = svc.intents.list()
    runs = svc.runs.list(limit=100_000)
    by_intent: dict[int, list] = defaultdict(list)
    for run in sorted(runs, key=lambda r: (r.started_at, r.id)):
        by_intent[run.intent_id].append(run)

    ok_per_intent = Counter(r.intent_id for r in runs if r.status == "ok")
    duplicates = {i: c for i, c in ok_per_intent.items() if c > 1}
    lost = set(ids) - set(ok_per_intent)
    assert not duplicates, f"{len(duplicates)} intents ran ok more than once"
    assert not lost, f"{len(lost)} intents never ran ok: {sorted(lost)[:10]}"
    assert set(by_intent) == set(ids)  # no run of an intent nobody created
    for intent_id, history in by_intent.items():
        seen = [r.status for r in history]
        assert seen[-1] == "ok" and set(seen[:-1]) <= {"interrupted"}, (intent_id, seen)
    assert {i.status for i in intents} == {"done"}  # none firing, none active and overdue

    # The victim died holding runs; the survivors closed them and retried each once, ok.
    assert in_flight, "the victim held no run when it was killed"
    survivor_pids = {d.pid for d in survivors}
    for run_id, intent_id in in_flight.items():
        died = svc.runs.get(run_id)
        assert died.status == "interrupted" and "lease expired" in (died.reason or ""), died
        after = [r for r in by_intent[intent_id] if r.id != run_id]
        assert [(r.status, r.trigger) for r in after] == [("ok", "retry")], after
        assert pid_of(after[0].owner) in survivor_pids

    per_daemon = Counter(pid_of(r.owner) for r in runs if r.status == "ok")
    assert all(per_daemon[d.pid] > 0 for d in daemons), per_daemon  # all three took part
    statuses = Counter(r.status for r in runs)
    with capsys.disabled():
        print(
            f"\npg multi-daemon: {len(ids)} intents ({BURST} at once + {len(stream.ids)} streamed), "
            f"runs {dict(statuses)}, ok per daemon "
            + ", ".join(
                f"{d.pid}{' (killed)' if d is victim else ''}={per_daemon[d.pid]}" for d in daemons
            )
            + f", in flight at kill {len(in_flight)}, {time.monotonic() - t0:.0f}s"
        )
