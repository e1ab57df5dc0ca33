"""NUL bytes (PostgreSQL rejects them in text) and a batch of outcomes that must not be lost.

Both engines: a SQLite file and a real PostgreSQL server. On PostgreSQL before the fix, a
failing run whose output held ``\\0`` made the whole batched UPDATE fail: every outcome of
the batch was lost and those runs came back ``interrupted`` and ran again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from goalsui.domain.text import strip_nul, strip_nul_deep
from goalsui.store import claims
from goalsui.store.claims import Completion
from tests.base_kit import FakeClock
from tests.claims_kit import claims_for
from tests.contract.test_scheduler_claims import bulk_at


def _claim(svc, n: int, clock: FakeClock) -> list[claims.Claimed]:
    bulk_at(svc, n, clock.now)
    now = clock.now
    res = claims_for(svc.store.engine).acquire(
        owner="me",
        now=now,
        lease_until=now + timedelta(seconds=60),
        limit=n,
    )
    assert len(res.fired) == n
    return res.fired


def _done(c: claims.Claimed, status: str, **values: Any) -> Completion:
    intent = c.intent
    return Completion(
        run_id=c.run["id"],
        intent_id=intent["id"],
        status=status,
        snapshot=(intent["kind"], intent["schedule"], intent["timezone"]),
        **values,
    )


def test_strip_nul_helpers() -> None:
    assert strip_nul("a\x00b\x00") == "ab"
    assert strip_nul(None) is None
    clean = {"k": ["x"]}
    assert strip_nul_deep(clean) is clean  # nothing to strip: the same object
    assert strip_nul_deep({"k\x00": ["a\x00", 1, {"n": "\x00"}]}) == {"k": ["a", 1, {"n": ""}]}


def test_a_batch_with_nul_in_one_output_records_every_outcome(
    db_url, empty_kb, make_service, clock: FakeClock
):
    svc = make_service(empty_kb, db_url, clock=clock)
    fired = _claim(svc, 6, clock)
    bad = fired[2]
    items = [
        _done(
            c,
            "failed" if c is bad else "ok",
            reason="exit 3: \x00bad" if c is bad else None,
            exit_code=3 if c is bad else 0,
            output_tail="binary \x00\x00 output" if c is bad else f"fine {k}",
            prompt="look at\x00 this" if c is bad else None,
            argv=("agent", "--x\x00") if c is bad else None,
            model="m\x00" if c is bad else None,
        )
        for k, c in enumerate(fired)
    ]
    now = clock.now + timedelta(seconds=1)
    done = claims_for(svc.store.engine).release(
        owner="me",
        now=now,
        completions=items,
    )
    assert len(done) == 6 and all(r.recorded and r.applied for r in done)
    runs = {r.id: r for r in svc.runs.list(limit=100)}
    assert sorted(r.status for r in runs.values()) == ["failed"] + ["ok"] * 5
    failed = runs[bad.run["id"]]
    assert (failed.output_tail, failed.reason, failed.exit_code) == (
        "binary  output",
        "exit 3: bad",
        3,
    )
    assert (failed.prompt, failed.argv, failed.model) == ("look at this", ["agent", "--x"], "m")
    assert svc.intents.get(bad.intent["id"]).last_error == "exit 3: bad"
    assert all(svc.intents.get(c.intent["id"]).status == "done" for c in fired if c is not bad)
    assert not [r for r in svc.runs.list(limit=100) if r.status in ("interrupted", "running")]


def test_one_outcome_that_cannot_be_stored_does_not_lose_the_others(
    db_url, empty_kb, make_service, clock: FakeClock, caplog
):
    """An exit code beyond any integer column fails its statement on both engines: the
    batch falls back to one outcome per transaction; the bad one keeps its status."""
    svc = make_service(empty_kb, db_url, clock=clock)
    fired = _claim(svc, 5, clock)
    bad = fired[1]
    items = [
        _done(c, "failed", exit_code=2**70, reason="huge") if c is bad else _done(c, "ok")
        for c in fired
    ]
    now = clock.now + timedelta(seconds=1)
    done = claims_for(svc.store.engine).release(
        owner="me",
        now=now,
        completions=items,
    )
    assert sorted(r.completion.run_id for r in done) == sorted(c.run["id"] for c in fired)
    runs = {r.id: r for r in svc.runs.list(limit=100)}
    assert [runs[c.run["id"]].status for c in fired] == ["ok", "failed", "ok", "ok", "ok"]
    kept = runs[bad.run["id"]]
    assert kept.exit_code is None and "could not be recorded" in (kept.reason or "")
    assert f"run {bad.run['id']}: its outcome could not be recorded" in caplog.text
    assert svc.intents.get(bad.intent["id"]).pending_trigger == "retry"  # the rules applied


def test_step_with_an_unstorable_outcome_still_claims_and_records(
    db_url, empty_kb, make_service, clock: FakeClock
):
    """Outcomes folded into the claim's transaction: one bad outcome neither loses the
    others nor the claim."""
    svc = make_service(empty_kb, db_url, clock=clock)
    fired = _claim(svc, 3, clock)
    waiting = bulk_at(svc, 2, clock.now, prefix="later")
    now = clock.now + timedelta(seconds=1)
    items = [_done(c, "ok", exit_code=2**70 if k == 0 else 0) for k, c in enumerate(fired)]
    result = claims_for(svc.store.engine).acquire(
        owner="me",
        now=now,
        lease_until=now + timedelta(seconds=60),
        limit=10,
        completions=items,
    )
    assert sorted(c.intent["id"] for c in result.fired) == sorted(waiting)
    assert len(result.released) == 3
    statuses = {r.id: r.status for r in svc.runs.list(limit=100)}
    assert [statuses[c.run["id"]] for c in fired] == ["ok", "ok", "ok"]


def test_service_writes_lose_nul_on_both_engines(db_url, empty_kb, make_service, clock):
    svc = make_service(empty_kb, db_url, clock=clock)
    thread = svc.threads.create("t\x00itle")
    todo = svc.todos.add(thread.id, "buy\x00 milk")
    svc.threads.post("hello\x00 world", thread_id=thread.id)
    intent = svc.intents.create(
        title="nul\x00",
        instruction="do\x00 it",
        kind="heartbeat",
        schedule="1h",
        checklist="- a\x00",
    )
    svc.events.emit("gh", {"text": "pay\x00load", "list": ["\x00x"]}, "d-1")
    assert svc.threads.get(thread.id).title == "title"
    assert [t.text for t in svc.todos.list(thread.id)] == ["buy milk"] and todo.id
    assert [m.content for m in svc.threads.messages(thread.id)] == ["hello world"]
    got = svc.intents.get(intent.id)
    assert (got.title, got.instruction, got.checklist) == ("nul", "do it", "- a")
    (event,) = svc.events.list()
    assert event.payload == {"text": "payload", "list": ["x"]}
