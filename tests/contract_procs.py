"""Run store operations from several real processes released at the same instant.

The contract tests (tests/contract/test_contract_*.py) use :func:`run_together`. Each child
imports goalsui, opens what it needs, prints ``ready``, waits for a "go" file, does one
operation, and prints its result as JSON on the last line.

    python tests/contract_procs.py GO_FILE KB DB_URL STATE_DIR OP [ARGS...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WAIT = 60.0


def _child(argv: list[str]) -> int:
    go, kb, db, state, op, *args = argv
    from goalsui.service import Service

    if op == "claim":  # import before the start line, like a running scheduler
        import goalsui.scheduler.rules
        import goalsui.store.claims  # noqa: F401
    service = None
    if op != "open":  # "open" is the operation itself (schema creation on first use)
        service = Service.open(kb, db, state, actor=f"proc-{os.getpid()}", sync=False)
    print("ready", flush=True)
    deadline = time.monotonic() + WAIT
    while not os.path.exists(go):  # a start line for every process
        if time.monotonic() > deadline:
            raise SystemExit("never got the go signal")
        time.sleep(0.002)
    result: Any
    if op == "open":  # schema on first use + the KB index, as every starting process does
        service = Service.open(kb, db, state, actor=f"proc-{os.getpid()}")
        result = service.schema.status()["state"]
    elif op == "create_intent":
        (key,) = args
        intent = service.intents.create(
            title=f"made by {os.getpid()}", kind="cron", schedule="0 3 * * *", operation_key=key
        )
        result = intent.id
    elif op == "emit":
        source, delivery = args
        emitted = service.events.emit(source, {"ref": "main", "n": os.getpid()}, delivery)
        result = {
            "event_id": emitted.event_id,
            "fired": emitted.fired,
            "duplicate": emitted.duplicate,
        }
    elif op == "claim":
        result = _claim(service, f"proc-{os.getpid()}", *args)
    else:
        raise SystemExit(f"unknown op {op}")
    service.close()
    print(json.dumps(result), flush=True)
    return 0


def _claim(service: Any, owner: str, now_iso: str) -> list[int]:
    """Claim due intents in batches of 20 until none are left (the scheduler's statement)."""
    from datetime import datetime, timedelta

    from goalsui.scheduler.rules import Rules
    from goalsui.store.claims import SqlClaimBackend

    now = datetime.fromisoformat(now_iso)
    backend = SqlClaimBackend(service.store.engine, Rules())
    got: list[int] = []
    while True:
        result = backend.acquire(
            owner=owner, now=now, lease_until=now + timedelta(minutes=5), limit=20
        )
        if not result.fired:
            return got
        got.extend(item.intent["id"] for item in result.fired)


def run_together(
    count: int, kb: Path, db: str, state: Path, op: str, *args: str, go_dir: Path
) -> list[Any]:
    """Start ``count`` children, release them at once, return their JSON results."""
    go = go_dir / f"go-{op}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, __file__, str(go), str(kb), db, str(state), op, *args]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(count)
    ]
    try:
        for proc in procs:
            line = proc.stdout.readline()
            if line.strip() != "ready":
                out, err = proc.communicate(timeout=WAIT)
                raise AssertionError(f"child failed before the start: {line}{out}\n{err}")
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=WAIT)
            if proc.returncode != 0:
                raise AssertionError(f"child exited {proc.returncode}: {err.strip()[-2000:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
