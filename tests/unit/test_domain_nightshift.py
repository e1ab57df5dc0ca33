"""Pure nightshift rules: nights, slots, branch names, plan items."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from goalsui.domain import nightshift as rules
from goalsui.errors import ValidationError


def test_a_night_turns_over_at_noon() -> None:
    assert rules.night_of(datetime(2026, 12, 4, 2, 30)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 3, 20, 0)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 4, 11, 59)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 4, 12, 0)) == date(2026, 12, 4)


def test_worker_slots_spread_over_the_night_and_stay_inside_it() -> None:
    assert rules.worker_slots(1) == ["30 20 * * *"]
    assert rules.worker_slots(3) == ["30 20 * * *", "0 0 * * *", "30 3 * * *"]
    for count in range(1, rules.MAX_WORKERS + 1):
        for cron in rules.worker_slots(count):
            minute, hour = (int(x) for x in cron.split()[:2])
            at = hour * 60 + minute
            assert at >= 20 * 60 + 30 or at < 7 * 60, (count, cron)
    with pytest.raises(ValidationError):
        rules.worker_slots(0)


def test_branch_names_are_safe_and_cut_at_a_word() -> None:
    name = rules.branch_name(date(2026, 12, 3), "worker-1", "Fix ../../etc; rm -rf / `x` NOW")
    assert name == "nightshift/2026-12-03/worker-1-fix-etc-rm-rf-x-now"
    long = rules.branch_name(date(2026, 12, 3), "w", "Write the installation section of the README")
    assert long == "nightshift/2026-12-03/w-write-the-installation-section-of-the"
    assert rules.slug("!!!") == "task"


def test_plan_items_round_trip_and_junk_is_ignored() -> None:
    item = rules.PlanItem(date(2026, 12, 3), "worker-1", "Fix it", branch="b", commits=2)
    assert rules.item_from_yaml(item.as_yaml()) == item
    assert rules.item_from_yaml("a string") is None
    assert rules.item_from_yaml({"night": "not a date", "worker": "w", "task": "t"}) is None
    assert rules.item_from_yaml({"night": "2026-12-03", "worker": "w"}) is None
    items = [item, rules.PlanItem(date(2026, 12, 2), "worker-1", "Old")]
    assert rules.items_for(items, date(2026, 12, 3), "worker-1") == [item]
    with pytest.raises(ValidationError):
        rules.check_task("   ")
