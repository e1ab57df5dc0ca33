"""Pure nightshift rules: nights, slots, branch names, plan items."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from goalsui.domain import nightshift as rules
from goalsui.errors import ValidationError


def test_a_night_turns_over_at_noon() -> None:
    assert rules.night_of(datetime(2026, 12, 4, 2, 30)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 3, 20, 0)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 4, 11, 59)) == date(2026, 12, 3)
    assert rules.night_of(datetime(2026, 12, 4, 12, 0)) == date(2026, 12, 4)


def test_an_instant_and_a_timezone_name_the_night_by_its_start_date() -> None:
    # 06:30 UTC is 07:30 in Berlin: the morning of the 4th, the night of the 3rd
    morning = datetime(2026, 12, 4, 6, 30, tzinfo=UTC)
    assert rules.night_of(morning, "Europe/Berlin") == date(2026, 12, 3)
    # 11:30 UTC is 12:30 in Berlin (a new night) but 03:30 in Los Angeles (still the 3rd's)
    noonish = datetime(2026, 12, 4, 11, 30, tzinfo=UTC)
    assert rules.night_of(noonish, "Europe/Berlin") == date(2026, 12, 4)
    assert rules.night_of(noonish, "America/Los_Angeles") == date(2026, 12, 3)
    start, end = rules.night_window(date(2026, 12, 3), "Europe/Berlin")
    assert (start, end) == (
        datetime(2026, 12, 3, 11, 0, tzinfo=UTC),
        datetime(2026, 12, 4, 11, 0, tzinfo=UTC),
    )
    assert rules.night_of(start, "Europe/Berlin") == date(2026, 12, 3)
    assert rules.night_of(end - timedelta(microseconds=1), "Europe/Berlin") == date(2026, 12, 3)
    assert rules.night_of(end, "Europe/Berlin") == date(2026, 12, 4)
    # a night across the switch to summer time is 23 hours long, still noon to noon
    start, end = rules.night_window(date(2026, 3, 28), "Europe/Berlin")
    assert end - start == timedelta(hours=23)


def test_the_report_file_and_heading_name_the_night_old_files_their_morning() -> None:
    night = date(2026, 12, 3)
    assert rules.report_file(night) == "2026-12-03.md"
    assert rules.branch_name(night, "w", "x").split("/")[1] == "2026-12-03"
    heading = rules.report_heading("Nightshift", night)
    assert heading == "# Nightshift report, night of 2026-12-03"
    assert rules.report_night(night, heading) == (night, False)
    # written before the rule: named by its morning, the heading ends with that date
    assert rules.report_night(date(2026, 12, 4), "# Nightshift report 2026-12-04") == (
        night,
        True,
    )
    # a file written by hand, or a heading naming another date: named by its night
    assert rules.report_night(night, "# notes") == (night, False)
    assert rules.report_night(night, "# Nightshift report 2026-12-01") == (night, False)


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
