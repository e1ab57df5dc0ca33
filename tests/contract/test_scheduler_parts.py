"""The scheduler's parts: the monitor that stops it when a task dies, its state enum and
heartbeat, the injected claim backend, idle without polling, the wake of another
process's change, and the process group a real runner records on its run."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from goalsui.domain.states import SchedulerState
from goalsui.domain.timeutil import utcnow
from goalsui.scheduler import Scheduler, SchedulerEvent
from goalsui.scheduler.rules import Rules
from goalsui.service import Service
from goalsui.store import doorbell
from goalsui.store.claims import ClaimBackend, SqlClaimBackend
from tests.base_kit import run_cli
from tests.contract.test_scheduler_loop import until
from tests.unit.test_scheduler_rules import FakeTurn


class CountingBackend:
    """The store's real claim backend, counting the calls the scheduler makes of it."""

    def __init__(self, service: Service) -> None:
        store = service.store
        rules = Rules(service.config, service.files.read)
        self.inner: ClaimBackend = SqlClaimBackend(store.engine, rules, store.read_engine)
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not name.startswith("_"):
            self.calls[name] += 1
        return value


@pytest.fixture
def svc(empty_kb: Path, make_service: Callable[..., Service]) -> Service:
    return make_service(empty_kb)


def cli_intent_add(kb: Path, db_url: str, state: Path, title: str) -> None:
    """``goalsui intent add --at <now>`` in a process of its own."""
    done = run_cli(
        "intent", "add", "--title", title, "--instruction", "x", "--at", utcnow().isoformat(),
        kb=kb, db=db_url, state=state, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


async def test_a_task_that_dies_stops_the_scheduler_and_says_which_and_why(svc, caplog):
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn)
    events: list[SchedulerEvent] = []
    s.subscribe(events.append)

    async def broken() -> None:
        raise RuntimeError("disk on fire")

    s.writer._write_when_due = broken  # type: ignore[method-assign]  # a fault in one part
    await s.start()
    assert isinstance(s.state, SchedulerState) and s.state == "running"
    intent = svc.intents.create(
        title="first", instruction="x", kind="at", schedule=utcnow().isoformat()
    )
    with caplog.at_level(logging.ERROR, logger="goalsui.scheduler"):
        await until(lambda: s.state == "failed" and s.rt.loop is None)
    assert s.error == "the scheduler's writer task died: RuntimeError: disk on fire"
    assert s.status_text == f"failed: {s.error}"
    assert any(e.kind == "error" and e.message == s.error for e in events)
    assert any("writer" in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert s.monitor.tasks == {}  # every other part was stopped too
    # The stop still recorded the turn that had ended ...
    (run,) = svc.runs.list(intent_id=intent.id)
    assert run.status == "ok"
    # ... and nothing claims any more.
    later = svc.intents.create(
        title="later", instruction="x", kind="at", schedule=utcnow().isoformat()
    )
    await asyncio.sleep(0.3)
    assert svc.runs.list(intent_id=later.id) == [] and len(turn.calls) == 1
    await s.stop()  # stopping a failed scheduler again is harmless; it stays failed
    assert s.state == "failed"


async def test_the_injected_claim_backend_does_the_database_work(svc):
    backend = CountingBackend(svc)
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn, backend=backend)
    try:
        intent = svc.intents.create(
            title="x", instruction="x", kind="at", schedule=utcnow().isoformat()
        )
        assert len(await s.tick()) == 1
        await s.drain()
        await s.recover()
        await s.prune()
    finally:
        await s.stop()
    assert svc.intents.get(intent.id).status == "done"
    assert backend.calls["acquire"] >= 1
    assert backend.calls["recover"] == 1 and backend.calls["prune"] == 1


async def test_an_idle_scheduler_keeps_its_heartbeat_without_polling(
    db_url, empty_kb, make_service
):
    svc = make_service(empty_kb, db_url)
    far = utcnow() + timedelta(days=1)
    for k in range(20):
        svc.intents.create(title=f"far {k}", instruction="x", kind="at", schedule=far.isoformat())
    backend = CountingBackend(svc)
    s = Scheduler(svc, turn=FakeTurn(), backend=backend)
    assert s.last_tick is None
    await s.start()
    try:
        await until(lambda: s.last_tick is not None)
        first = s.last_tick
        assert first is not None
        # The heartbeat goes on (the console's and the daemon's readiness read it) ...
        await until(lambda: s.last_tick is not None and s.last_tick.monotonic > first.monotonic)
        assert s.last_tick.wall >= first.wall
        await until(
            lambda: s.last_tick.monotonic > first.monotonic + 2 * s.heartbeat_interval, timeout=30
        )
        # ... while nothing looked at the database: no poll, no claim (the alarm is a day,
        # capped at 30 s, away; other processes' changes wake it instead).
        assert backend.calls["soonest_burst"] == 0
        assert backend.calls["acquire"] == 1  # the first tick at start
    finally:
        await s.stop()


async def test_another_processs_intent_add_wakes_an_idle_scheduler(
    db_url, empty_kb, make_service, tmp_path
):
    svc = make_service(empty_kb, db_url)
    backend = CountingBackend(svc)
    turn = FakeTurn()
    s = Scheduler(svc, turn=turn, backend=backend)
    await s.start()
    try:
        await asyncio.sleep(0.5)  # idle: nothing is due
        cli_intent_add(empty_kb, db_url, tmp_path / "cli-state", "from another process")
        # Within 10 s, where the idle scheduler's own alarm is 30 s away and it never polls.
        await until(lambda: len(turn.calls) == 1, timeout=10)
        assert turn.calls[0].intent.title == "from another process"
        assert backend.calls["soonest_burst"] == 0
    finally:
        await s.stop()


async def test_a_claim_step_that_hangs_lets_the_heartbeat_age(db_url, empty_kb, make_service):
    # An idle loop is current without a timer; a loop stuck in a step is not.
    import threading

    svc = make_service(empty_kb, db_url)
    release = threading.Event()

    class HangingBackend(CountingBackend):
        def __getattr__(self, name: str) -> Any:
            value = super().__getattr__(name)
            if name != "acquire" or self.calls["acquire"] < 2:
                return value

            def hang(*args: Any, **kwargs: Any) -> Any:
                release.wait(30)
                return value(*args, **kwargs)

            return hang

    s = Scheduler(svc, turn=FakeTurn(), backend=HangingBackend(svc))
    await s.start()
    try:
        await until(lambda: s.last_tick is not None)
        await asyncio.sleep(0.3)  # parked: the heartbeat is now
        assert s.last_tick is not None and s.last_tick.monotonic >= time.monotonic() - 0.05
        svc.intents.create(title="x", instruction="x", kind="at", schedule=utcnow().isoformat())
        await asyncio.sleep(0.6)  # the second step hangs on the database thread
        assert s.last_tick is not None
        assert time.monotonic() - s.last_tick.monotonic >= 0.5
    finally:
        release.set()
        await s.stop()


async def test_an_idle_scheduler_on_sqlite_rings_a_bell_of_its_own(svc):
    folder = doorbell.wake_dir(svc.store.engine)
    assert folder is not None
    s = Scheduler(svc, turn=FakeTurn())
    await s.start()
    try:
        bells = list(folder.glob(f"*{doorbell.SUFFIX}"))
        assert len(bells) == 1 and bells[0].is_socket()
        assert bells[0].stat().st_mode & 0o777 == 0o600
    finally:
        await s.stop()
    assert list(folder.glob(f"*{doorbell.SUFFIX}")) == []


def test_a_change_on_sqlite_rings_every_bell_with_its_origin(svc):
    folder = doorbell.wake_dir(svc.store.engine)
    assert folder is not None and folder.name == "goalsui.db-wake"
    folder.mkdir(parents=True, exist_ok=True)
    bell = doorbell.Bell(folder)
    bell.open()
    try:
        svc.intents.create(title="x", instruction="x", kind="at", schedule=utcnow().isoformat())
        assert set(bell.origins()) == {svc.changes.origin}
    finally:
        bell.close()


async def test_a_real_runner_records_its_host_and_process_group_on_the_run(svc):
    s = Scheduler(svc, grace_seconds=1)  # the default turn: the real run_turn
    code = "import os, time; print('group', os.getpgid(0), flush=True); time.sleep(0.5)"
    intent = svc.intents.create(
        title="pgid",
        instruction="x",
        kind="at",
        schedule=utcnow().isoformat(),
        runner={"command": [sys.executable, "-c", code]},
    )
    try:
        (run_id,) = await s.tick()
        await until(lambda: svc.runs.get(run_id).pgid is not None)
        assert s.running[run_id].pgid == svc.runs.get(run_id).pgid  # noted while it runs
        await s.drain(timeout=60)
    finally:
        await s.stop()
    run = svc.runs.get(run_id)
    assert run.intent_id == intent.id and run.status == "ok"
    assert run.host == socket.gethostname()
    assert f"group {run.pgid}" in (run.output_tail or "")


async def test_starting_a_large_batch_lets_the_loop_run_between_slices(svc):
    """A batch claimed ahead is started in slices: a callback waiting on the loop (a turn's
    start timer) runs while the batch is still being started, not after all of it."""
    from goalsui.store.claims import ClaimAction, ClaimDecision, Claimed, ClaimResult

    s = Scheduler(svc, turn=FakeTurn())
    assert s.rt.open()
    launcher, n = s.launcher, 2000
    due = utcnow() + timedelta(hours=1)  # claimed ahead: every turn waits for its gate
    result = ClaimResult()
    for k in range(1, n + 1):
        intent = {"id": k, "title": f"t{k}", "kind": "at", "next_run_at": None}
        run = {"id": k, "started_at": due, "trigger": "schedule", "planned_at": due}
        decision = ClaimDecision(ClaimAction.FIRE, "schedule", due, None)
        result.fired.append(Claimed(intent, run, None, decision))
    seen: list[int] = []
    asyncio.get_running_loop().call_soon(lambda: seen.append(len(launcher.tasks)))
    try:
        assert len(await launcher.launch(result)) == n
        assert seen and 0 < seen[0] < n, seen  # it ran between two slices
    finally:
        for task in launcher.tasks.values():
            task.cancel()
        launcher.open_all_gates()  # a turn waiting for its gate sees its cancel when it opens
        await asyncio.gather(*launcher.tasks.values(), return_exceptions=True)
        s.rt.close()
