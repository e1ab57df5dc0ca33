"""Contract: claimers in separate processes on one database never claim a row twice,
and together they claim every due row (the scheduler's compare-and-set, with
FOR UPDATE SKIP LOCKED on PostgreSQL)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from goalsui.service import Service
from goalsui.store.models import Intent
from tests.contract_procs import run_together

DUE = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_claimers_in_several_processes_take_disjoint_sets(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    service = make_service(empty_kb, db_url)
    rows = [
        {
            "title": f"due {k}",
            "instruction": "x",
            "kind": "at",
            "status": "active",
            "schedule": DUE.isoformat(),
            "timezone": "UTC",
            "next_run_at": DUE,
            "cooldown_s": 0,
            "fires": 0,
            "attempts": 0,
            "consecutive_failures": 0,
            "created_at": DUE,
            "updated_at": DUE,
        }
        for k in range(300)
    ]
    with service.store.write() as s:
        s.execute(insert(Intent), rows)
    ids = {i.id for i in service.intents.list()}
    claimed = run_together(
        3, empty_kb, db_url, tmp_path / "state", "claim", DUE.isoformat(), go_dir=tmp_path
    )
    every = [i for mine in claimed for i in mine]
    assert Counter(every).most_common(1)[0][1] == 1, "a row was claimed twice"
    assert set(every) == ids, "a due row was left unclaimed"
    runs = service.runs.running()
    assert Counter(r.intent_id for r in runs) == Counter(ids)
    owners = {i.id: i.lease_owner for i in service.intents.list()}
    assert all(r.owner == owners[r.intent_id] for r in runs)
