"""Recovery of a dead scheduler's runs, with real process groups.

Each runner here is a real ``sleep`` started in its own session (its own process group),
as the command runner starts them. The run row says where its group lives; recovery
kills a live group on this host (the whole group, children included) before the run can
be retried, leaves a group on another host alone, and holds an interrupted run of an
agent (policy ``review``) for the operator instead of retrying it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from goalsui.domain.interrupts import interrupt_policy
from goalsui.store import claims, processes
from goalsui.store.claims import Completion
from goalsui.store.models import Intent
from tests.base_kit import FakeClock
from tests.claims_kit import claims_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

DEAD = "dead-scheduler"


def _intent(svc, clock: FakeClock, **extra: Any) -> int:
    row = Intent(
        title=str(extra.pop("title", "job")),
        instruction="x",
        kind="at",
        schedule=clock.now.isoformat(),
        next_run_at=clock.now,
        created_at=clock.now,
        updated_at=clock.now,
        **extra,
    )
    with svc.store.write() as s:
        s.add(row)
        s.flush()
        return row.id


def _claimed_by_the_dead(svc, clock: FakeClock) -> dict[int, int]:
    """Claim every due intent as a scheduler that will die: ``{intent_id: run_id}``."""
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner=DEAD,
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=50,
    )
    return {c.intent["id"]: c.run["id"] for c in res.fired}


def _spawn(marker: str, script: str = "sleep 60") -> subprocess.Popen[bytes]:
    # The marker makes the processes countable; the shell runs the script in one group.
    return subprocess.Popen(["sh", "-c", f": {marker}; {script}"], start_new_session=True)


def _group_pids(pgid: int) -> list[int]:
    found = processes._members(pgid) or []
    return [pid for pid, state, _ in found if state != "Z"]


def _recover(svc, clock: FakeClock, **kwargs: Any) -> claims.RecoveryResult:
    now = clock.advance(seconds=60)  # the dead scheduler's leases have expired
    return claims_for(svc.store.engine).recover(
        owner="new-scheduler",
        now=now,
        **kwargs,
    )


@pytest.fixture
def clock() -> FakeClock:
    """Real time: recovery compares a run's start with its process group's start."""
    return FakeClock(datetime.now(UTC))


@pytest.fixture
def spawned():
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def test_a_live_group_on_this_host_is_killed_before_the_retry(
    empty_kb, make_service, clock: FakeClock, spawned
):
    svc = make_service(empty_kb, clock=clock)
    intent_id = _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    proc = _spawn(f"goalsui-test-{run_id}", "sleep 60 & sleep 60 >/dev/null 2>&1 & wait")
    spawned.append(proc)
    time.sleep(0.2)
    assert len(_group_pids(proc.pid)) == 3  # the shell and its two background children
    assert claims_for(svc.store.engine).record_process_group(
        run_id, processes.this_host(), proc.pid
    )

    result = _recover(svc, clock, kill=partial(processes.kill_group, grace=1.0))

    assert _group_pids(proc.pid) == []  # the whole group is gone, children included
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert [r["id"] for r in result.killed] == [run_id] and not result.alive
    run = svc.runs.get(run_id)
    assert (run.status, run.host, run.pgid, run.needs_review) == (
        "interrupted",
        processes.this_host(),
        proc.pid,
        False,
    )
    intent = svc.intents.get(intent_id)
    assert (intent.status, intent.pending_trigger) == ("active", "retry")


def test_a_group_that_ignores_sigterm_is_killed(empty_kb, make_service, clock, spawned):
    svc = make_service(empty_kb, clock=clock)
    _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    proc = _spawn("goalsui-test-stubborn", "trap '' TERM; sleep 60 & wait; sleep 60")
    spawned.append(proc)
    time.sleep(0.2)
    claims_for(svc.store.engine).record_process_group(run_id, processes.this_host(), proc.pid)
    _recover(svc, clock, kill=partial(processes.kill_group, grace=0.3))
    assert _group_pids(proc.pid) == []
    assert proc.wait(timeout=5) == -signal.SIGKILL
    assert svc.runs.get(run_id).status == "interrupted"


def test_a_group_that_survives_blocks_the_retry(empty_kb, make_service, clock, spawned):
    """If the group cannot be ended, the run stays ``running`` and its intent is not
    retried: the next sweep tries again."""
    svc = make_service(empty_kb, clock=clock)
    intent_id = _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    proc = _spawn("goalsui-test-survivor")
    spawned.append(proc)
    claims_for(svc.store.engine).record_process_group(run_id, processes.this_host(), proc.pid)
    result = _recover(svc, clock, kill=lambda pgid: False)
    assert [r["id"] for r in result.alive] == [run_id] and not result.interrupted
    assert proc.poll() is None
    assert svc.runs.get(run_id).status == "running"
    assert svc.intents.get(intent_id).status == "firing"
    # Once it is gone, the next sweep recovers the run.
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
    result = _recover(svc, clock)
    assert [row["id"] for row, _, _ in result.interrupted] == [intent_id]
    assert svc.runs.get(run_id).status == "interrupted"


def test_a_group_on_another_host_is_left_alone(empty_kb, make_service, clock, spawned):
    svc = make_service(empty_kb, clock=clock)
    _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    proc = _spawn("goalsui-test-elsewhere")
    spawned.append(proc)
    claims_for(svc.store.engine).record_process_group(run_id, "another-host.example", proc.pid)
    # Its lease still holds: nothing happens at all.
    now = clock.now + timedelta(seconds=5)
    early = claims_for(svc.store.engine).recover(
        owner="new-scheduler",
        now=now,
    )
    assert not (early.interrupted or early.killed or early.orphans)
    assert svc.runs.get(run_id).status == "running"
    # Lease expired: the run is recovered, but a group elsewhere is not ours to signal.
    result = _recover(svc, clock)
    assert not result.killed and proc.poll() is None
    assert svc.runs.get(run_id).status == "interrupted"


@pytest.mark.parametrize("run_offset", [-3600, 3600], ids=["run-long-before", "run-after"])
def test_a_reused_process_group_number_is_not_killed(
    empty_kb, make_service, clock, spawned, run_offset: int
):
    """A group whose leader started long after the run did (or before it) belongs to some
    other program that got the same number."""
    svc = make_service(empty_kb, clock=clock)
    proc = _spawn("goalsui-test-reused")
    spawned.append(proc)
    time.sleep(0.1)
    clock.set(clock.now + timedelta(seconds=run_offset))
    _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    claims_for(svc.store.engine).record_process_group(run_id, processes.this_host(), proc.pid)
    assert not processes.group_is_the_runs(proc.pid, svc.runs.get(run_id).started_at)
    result = _recover(svc, clock)
    assert not result.killed and proc.poll() is None
    assert svc.runs.get(run_id).status == "interrupted"


def test_record_process_group_only_on_a_running_run(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    _intent(svc, clock)
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    _recover(svc, clock)
    assert not claims_for(svc.store.engine).record_process_group(run_id, "h", 12345)
    assert svc.runs.get(run_id).pgid is None


# -- the interrupt policy ------------------------------------------------------------------
def test_interrupt_policy_rule() -> None:
    assert interrupt_policy(None, {"agent": "claude"}) == "review"
    assert interrupt_policy(None, {"command": ["true"]}) == "retry"
    assert interrupt_policy(None, None) == "retry"
    assert interrupt_policy("retry", {"agent": "claude"}) == "retry"
    assert interrupt_policy("review", {"command": ["true"]}) == "review"
    assert interrupt_policy("nonsense", {"agent": "codex"}) == "review"


def test_an_interrupted_agent_run_waits_for_review(db_url, empty_kb, make_service, clock):
    svc = make_service(empty_kb, db_url, clock=clock)
    agent = _intent(svc, clock, title="agent", runner={"agent": "claude"})
    forced = _intent(svc, clock, title="forced", runner={"agent": "claude"}, on_interrupt="retry")
    plain = _intent(svc, clock, title="plain", runner={"command": ["true"]})
    asked = _intent(svc, clock, title="asked", on_interrupt="review")
    runs = _claimed_by_the_dead(svc, clock)
    result = _recover(svc, clock)
    assert len(result.interrupted) == 4
    for intent_id in (agent, asked):
        intent = svc.intents.get(intent_id)
        run = svc.runs.get(runs[intent_id])
        assert (run.status, run.needs_review) == ("interrupted", True)
        assert (intent.status, intent.pending_trigger, intent.next_run_at) == ("paused", None, None)
        assert intent.last_error.startswith(f"needs review: run {runs[intent_id]} was interrupted")
        assert intent.consecutive_failures == 0 and intent.lease_owner is None
    for intent_id in (forced, plain):
        intent = svc.intents.get(intent_id)
        assert svc.runs.get(runs[intent_id]).needs_review is False
        assert (intent.status, intent.pending_trigger) == ("active", "retry")
    assert "interrupted" in {r.status for r in svc.runs.list(failed=True)}
    # The operator retries it: due now, fired again by the next claim.
    svc.intents.retry(agent)
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner="new-scheduler",
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=10,
    )
    assert agent in {c.intent["id"] for c in res.fired}


def test_a_run_interrupted_at_shutdown_follows_the_policy_too(empty_kb, make_service, clock):
    svc = make_service(empty_kb, clock=clock)
    agent = _intent(svc, clock, runner={"agent": "claude"})
    (run_id,) = _claimed_by_the_dead(svc, clock).values()
    row = svc.intents.get(agent)
    (done,) = claims_for(svc.store.engine).release(
        owner=DEAD,
        now=clock.now,
        completions=[
            Completion(
                run_id=run_id,
                intent_id=agent,
                status="interrupted",
                reason="interrupted: the scheduler stopped (shutdown)",
                snapshot=(row.kind, row.schedule, row.timezone),
            )
        ],
    )
    assert done.decision is not None and done.decision.needs_review
    assert svc.runs.get(run_id).needs_review is True
    assert svc.intents.get(agent).status == "paused"


def _claimed_by(svc, clock: FakeClock, owner: str) -> dict[int, int]:
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner=owner,
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=50,
    )
    return {c.intent["id"]: c.run["id"] for c in res.fired}


def test_a_lapsed_lease_of_a_scheduler_that_still_lives_here_is_not_recovered(
    empty_kb, make_service, clock: FakeClock, spawned
):
    """A slow scheduler (its lease lapsed, its process alive) keeps its run: recovering it
    would run the job twice. Once that process is gone, the run is recovered."""
    svc = make_service(empty_kb, clock=clock)
    intent_id = _intent(svc, clock)
    owner_proc = _spawn("goalsui-test-slow-scheduler")  # stands for the owner's process
    spawned.append(owner_proc)
    owner = f"{processes.this_host()[:40]}:{owner_proc.pid}:a1b2c3"
    (run_id,) = _claimed_by(svc, clock, owner).values()

    result = _recover(svc, clock)  # the lease lapsed 30 s ago
    assert not result.interrupted and not result.orphans
    assert svc.runs.get(run_id).status == "running"
    assert svc.intents.get(intent_id).status == "firing"

    os.killpg(owner_proc.pid, signal.SIGKILL)
    owner_proc.wait(timeout=10)
    result = _recover(svc, clock)
    assert [row["id"] for row, _, _ in result.interrupted] == [intent_id]
    assert svc.runs.get(run_id).status == "interrupted"


def test_owner_alive_here_reads_host_pid_and_nonce() -> None:
    host = processes.this_host()
    me = f"{host[:40]}:{os.getpid()}:000001"
    assert processes.owner_alive_here(me, me=me, host=host)  # the asking scheduler itself
    # another scheduler of this very process (another nonce) has stopped
    assert not processes.owner_alive_here(f"{host[:40]}:{os.getpid()}:000002", me=me, host=host)
    assert processes.owner_alive_here(f"{host[:40]}:{os.getppid()}:abcdef", me=me, host=host)
    assert not processes.owner_alive_here(f"elsewhere:{os.getppid()}:abcdef", me=me, host=host)
    for junk in (None, "", "dead-scheduler", f"{host}:x:y", f"{host}:1:abc"):
        assert not processes.owner_alive_here(junk, me=me, host=host)
