"""The console's plan read with the standard library (goalsui/service/quick_plan.py): the
same fires, skips, notes and warnings as ``plan(service, ...)``, without the database stack."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from goalsui.domain.planned import PlannedFire
from goalsui.kb.layout import WorkerSeed
from goalsui.scheduler.plan import plan
from goalsui.service import Service
from goalsui.service.quick import sqlite_file
from goalsui.service.quick_plan import read_plan
from goalsui.store.models import IntentRun
from tests.base_kit import FakeClock
from tests.unit.test_plan import update

REPO = Path(__file__).resolve().parents[2]
ORM = ("sqlalchemy", "sqlmodel", "pydantic")


def add_run(service: Service, intent_id: int, started: datetime, seconds: float | None) -> None:
    """A finished run of ``seconds``, or a running one (None)."""
    finished = None if seconds is None else started + timedelta(seconds=seconds)
    with service.store.write() as s:
        s.add(
            IntentRun(
                intent_id=intent_id,
                status="running" if seconds is None else "ok",
                started_at=started,
                finished_at=finished,
            )
        )


def seed(name: str, schedule: dict[str, str]) -> WorkerSeed:
    return WorkerSeed(name, {"schedule": schedule, "runner": {"command": ["true"]}})


@pytest.fixture
def busy(empty_kb: Path, make_service, clock: FakeClock) -> Service:
    """Every kind of intent the plan tells apart, a running run and a run history."""
    svc: Service = make_service(empty_kb, clock=clock)
    now = clock.now
    view = svc.goals.create(
        "Nightshift",
        "t",
        [
            seed("scout", {"cron": "30 20 * * *", "timezone": "Europe/Berlin"}),
            seed("pulse", {"every": "10m"}),
            seed("idle", {"every": "15m"}),
        ],
    )
    workers = svc.kb.goal_dir(view.goal_id) / "workers"
    (workers / "pulse" / "prompt.md").write_text("- [ ] look at the inbox\n")
    (workers / "idle" / "prompt.md").write_text("# Nothing yet\n\n- [ ]\n")
    thread = svc.threads.create("Inbox")
    on_thread = {"instruction": "look", "thread_id": thread.id}
    svc.intents.create(title="at once", kind="at", schedule=(now + timedelta(hours=3)).isoformat(), **on_thread)  # fmt: skip
    svc.intents.create(title="checklist", kind="heartbeat", schedule="1h", checklist="- [ ] mail?", timezone="Europe/Berlin",
                       active_hours={"start": "08:00", "end": "22:00", "timezone": "Europe/Berlin"}, **on_thread)  # fmt: skip
    svc.intents.create(title="empty", kind="heartbeat", schedule="30m", checklist="# Inbox\n- [ ]\n", **on_thread)  # fmt: skip
    paused = svc.intents.create(title="paused", kind="cron", schedule="*/5 * * * *", **on_thread)
    svc.intents.pause(paused.id)
    failed = svc.intents.create(title="broken", kind="cron", schedule="0 * * * *", **on_thread)
    update(svc, failed.id, status="failed", consecutive_failures=5, last_error="exit 1: boom", next_run_at=None)  # fmt: skip
    ended = svc.intents.create(title="cancelled", kind="cron", schedule="0 * * * *", **on_thread)
    svc.intents.cancel(ended.id)
    retrying = svc.intents.create(title="retrying", kind="cron", schedule="0 20 * * *", **on_thread)
    update(svc, retrying.id, consecutive_failures=2, next_run_at=now + timedelta(seconds=4), pending_trigger="retry")  # fmt: skip
    event = svc.intents.create(title="ci", instruction="x", kind="event", event_source="ci", cooldown="10m")  # fmt: skip
    update(svc, event.id, last_fired_at=now - timedelta(minutes=2), pending_trigger="event",
           pending_event_id=7, next_run_at=now)  # fmt: skip
    pulse = svc.workers.intent(view.goal_id, "pulse")
    for n in range(1, 6):  # runs longer than the 10m cadence: the next ticks overlap
        add_run(svc, pulse.id, now - timedelta(hours=n), 900 + n)
    add_run(svc, pulse.id, now - timedelta(minutes=3), None)
    add_run(svc, svc.workers.intent(view.goal_id, "scout").id, now - timedelta(days=20), 60)
    return svc


def db_file(svc: Service) -> Path:
    path = sqlite_file(svc.kb.root, svc.db_url, None)
    assert path is not None and path.is_file()
    return path


def test_the_quick_plan_is_the_services_plan(busy: Service, clock: FakeClock) -> None:
    now, until = clock.now, clock.now + timedelta(hours=30)
    full = plan(busy, now, until)
    quick = read_plan(db_file(busy), busy.kb.root, now, until)
    assert quick == full
    # and the plan is not a trivial one: every rule above shows in it
    rules = [f.rule for f in full]
    kinds = {f.kind for f in full}
    assert kinds == {"fire", "skip", "note"}
    assert "skipped: empty-checklist (zero runner calls)" in rules
    assert any(r.startswith("skipped: quiet-hours") for r in rules)
    assert any(r.startswith("paused") for r in rules)
    assert any(r.startswith("auto-disabled") for r in rules)
    assert any(r.startswith("retry after 2") for r in rules)
    assert any(r.startswith("event pending (event 7)") for r in rules)
    assert any(f.label == "nightshift/pulse" and f.kind == "fire" for f in full)
    idle = [f for f in full if f.label == "nightshift/idle"]
    assert idle and all(f.kind == "skip" for f in idle)  # its prompt.md is empty
    warned = [f for f in full if f.warning]
    assert warned and "its run since" in (warned[0].warning or "")
    assert all(f.label == "nightshift/pulse" for f in warned)
    assert "p95 15m" in warned[-1].length_basis


def test_a_change_in_the_database_shows_in_both(busy: Service, clock: FakeClock) -> None:
    now, until = clock.now, clock.now + timedelta(hours=6)
    before = read_plan(db_file(busy), busy.kb.root, now, until)
    paused = next(i for i in busy.intents.list() if i.title == "retrying")
    busy.intents.pause(paused.id)
    after = read_plan(db_file(busy), busy.kb.root, now, until)
    assert after != before and after == plan(busy, now, until)


def test_no_quick_plan_for_another_schema_or_no_file(
    busy: Service, clock: FakeClock, tmp_path: Path
) -> None:
    now = clock.now
    later = now + timedelta(hours=1)
    assert read_plan(tmp_path / "missing.db", busy.kb.root, now, later) is None
    copy = tmp_path / "old.db"
    source, conn = sqlite3.connect(db_file(busy)), sqlite3.connect(copy)
    source.backup(conn)  # the pages still in the write-ahead log too
    conn.execute("UPDATE alembic_version SET version_num = '0001'")
    conn.commit()
    source.close()
    conn.close()
    assert read_plan(copy, busy.kb.root, now, later) is None  # the service upgrades it first


CHECK = """
import json, sys
from datetime import datetime
from pathlib import Path
from goalsui.service.quick_plan import read_plan
db, kb, now, until = sys.argv[1:]
fires = read_plan(Path(db), Path(kb), datetime.fromisoformat(now), datetime.fromisoformat(until))
loaded = [m for m in ("sqlalchemy", "sqlmodel", "pydantic") if m in sys.modules]
print(json.dumps({"loaded": loaded, "fires": None if fires is None else [f.as_json() for f in fires]}))
"""


def test_the_quick_plan_loads_no_database_stack(busy: Service, clock: FakeClock) -> None:
    now, until = clock.now, clock.now + timedelta(hours=30)
    args = [str(db_file(busy)), str(busy.kb.root), now.isoformat(), until.isoformat()]
    result = subprocess.run(
        [sys.executable, "-c", CHECK, *args], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["loaded"] == []
    expected: list[PlannedFire] = plan(busy, now, until)
    assert out["fires"] == [json.loads(json.dumps(f.as_json())) for f in expected]
