"""The goals' budget lines read from a snapshot equal the service's, without SQLAlchemy."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.service.quick import read_records
from goalsui.service.quick_costs import goal_budget_lines
from goalsui.store.models import IntentRun
from goalsui.store.snapshot import open_snapshot
from tests.base_kit import FakeClock

BLOG, PULSE, DOCS = "blog-drafts-c24a3db0", "demo-pulse-05c0f5ca", "docs-review-bfb1526f"
BUDGETS = {
    BLOG: {"usd_per_day": 5, "usd_per_night": 2, "tokens_per_day": 9000},
    PULSE: {"usd_per_day": 1.5, "tokens_per_day": 400, "timezone": "America/New_York"},
}


def _runs(service: Service, now: datetime) -> None:
    """Runs with and without usage, in and out of today's and tonight's windows."""
    rows = []
    for number, (goal_id, worker) in enumerate(
        [(BLOG, "drafter"), (PULSE, "pulse"), (PULSE, "flaky"), (DOCS, "editor")] * 4
    ):
        intent = service.workers.intent(goal_id, worker)
        started = now - timedelta(hours=3 * number, minutes=7)
        usage = number % 3 != 2  # every third run reported nothing
        rows.append(
            IntentRun(
                intent_id=intent.id,
                status="ok" if number % 5 else "failed",
                planned_at=started,
                started_at=started,
                finished_at=started + timedelta(seconds=5),
                cost_usd=0.25 * number if usage else None,
                tokens_in=100 + number if usage else None,
                tokens_out=7 * number if usage else None,
            )
        )
    with service.store.write() as s:
        s.add_all(rows)


@pytest.mark.parametrize("hour", [14, 23])  # in New York: the night limit off, then on
def test_budget_lines_equal_the_services(
    sample_kb: Path, make_service: Callable[..., Service], clock: FakeClock, hour: int
) -> None:
    clock.set(datetime(2026, 12, 2, hour, 30, tzinfo=UTC))  # BLOG: its worker's zone
    service = make_service(sample_kb, clock=clock)
    for goal_id, budget in BUDGETS.items():
        service.kb.set_goal_field(goal_id, budget=budget)
    _runs(service, clock.now)
    db_file = service.state_dir / "goalsui.db"
    records = read_records(db_file, clock.now, timedelta(days=1))
    assert records is not None
    expected = service.costs.goal_lines(records.goals)
    snap = open_snapshot(db_file)
    assert snap is not None
    try:
        got = goal_budget_lines(snap, sample_kb, records.goals, clock.now)
    finally:
        snap.close()
    assert got == expected
    assert sorted(got) == sorted(BUDGETS)
    assert any(line.spent > 0 for lines in got.values() for line in lines)
    assert [line.active for line in got[BLOG]] == [True, hour == 23, True]


def test_budget_lines_load_no_sqlalchemy(
    sample_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(sample_kb)
    service.kb.set_goal_field(BLOG, budget=BUDGETS[BLOG])
    db_file = service.state_dir / "goalsui.db"
    code = (
        "import sys\n"
        "from datetime import UTC, datetime, timedelta\n"
        "from pathlib import Path\n"
        "from goalsui.service.quick import read_records\n"
        "from goalsui.service.quick_costs import goal_budget_lines\n"
        "from goalsui.store.snapshot import open_snapshot\n"
        "now = datetime.now(UTC)\n"
        f"db, kb = Path({str(db_file)!r}), Path({str(sample_kb)!r})\n"
        "records = read_records(db, now, timedelta(days=1))\n"
        "snap = open_snapshot(db)\n"
        "lines = goal_budget_lines(snap, kb, records.goals, now)\n"
        "print(sorted(lines))\n"
        "heavy = ('sqlalchemy', 'sqlmodel', 'pydantic')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == [repr([BLOG]), "[]"]
