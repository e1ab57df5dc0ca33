"""Cron math across DST: expected instants are computed by hand (local time in comments).

Zones and 2026 transitions used here:
- Europe/Berlin    CET +01 / CEST +02: spring 03-29 02:00->03:00 (at 01:00Z),
                   fall 10-25 03:00->02:00 (at 01:00Z; 02:00-03:00 local happens twice).
- America/New_York EST -05 / EDT -04: spring 03-08 02:00->03:00 (at 07:00Z),
                   fall 11-01 02:00->01:00 (at 06:00Z; 01:00-02:00 local happens twice).
- Australia/Sydney AEST +10 / AEDT +11: fall 04-05 03:00->02:00 (at 04-04 16:00Z;
                   02:00-03:00 local happens twice), spring 10-04 02:00->03:00 (at 10-03 16:00Z).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from goalsui.domain.cron import (
    is_every_hour,
    next_occurrence,
    occurrences,
    validate_cron,
)
from goalsui.errors import ScheduleError


def z(text: str) -> datetime:
    """A UTC literal: z('2026-03-29 01:00')."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- Europe/Berlin ---------------------------------------------------------------------


def test_berlin_spring_hourly_once_per_real_hour() -> None:
    got = occurrences("0 * * * *", "Europe/Berlin", z("2026-03-28 22:30"), count=4)
    assert got == [
        z("2026-03-28 23:00"),  # 03-29 00:00 CET
        z("2026-03-29 00:00"),  # 01:00 CET
        z("2026-03-29 01:00"),  # 03:00 CEST (02:00 does not exist)
        z("2026-03-29 02:00"),  # 04:00 CEST
    ]


def test_berlin_spring_daily_in_gap_fires_at_gap_end() -> None:
    got = occurrences("30 2 * * *", "Europe/Berlin", z("2026-03-27 12:00"), count=3)
    assert got == [
        z("2026-03-28 01:30"),  # 03-28 02:30 CET
        z("2026-03-29 01:00"),  # 03-29 02:30 does not exist -> 03:00 CEST
        z("2026-03-30 00:30"),  # 03-30 02:30 CEST
    ]


def test_berlin_fall_hourly_fires_in_both_repeated_hours() -> None:
    got = occurrences("0 * * * *", "Europe/Berlin", z("2026-10-24 22:30"), count=5)
    assert got == [
        z("2026-10-24 23:00"),  # 10-25 01:00 CEST
        z("2026-10-25 00:00"),  # 02:00 CEST (first pass)
        z("2026-10-25 01:00"),  # 02:00 CET  (second pass)
        z("2026-10-25 02:00"),  # 03:00 CET
        z("2026-10-25 03:00"),  # 04:00 CET
    ]


def test_berlin_fall_daily_repeated_time_fires_once_first() -> None:
    got = occurrences("30 2 * * *", "Europe/Berlin", z("2026-10-23 12:00"), count=3)
    assert got == [
        z("2026-10-24 00:30"),  # 10-24 02:30 CEST
        z("2026-10-25 00:30"),  # 10-25 02:30 CEST (first occurrence; not 01:30Z again)
        z("2026-10-26 01:30"),  # 10-26 02:30 CET
    ]


def test_berlin_every_two_hours_is_a_fixed_hour_schedule() -> None:
    # */2 does not fire every hour, so the repeated 02:00 fires once (first pass).
    got = occurrences("0 */2 * * *", "Europe/Berlin", z("2026-10-24 21:30"), count=3)
    assert got == [
        z("2026-10-24 22:00"),  # 10-25 00:00 CEST
        z("2026-10-25 00:00"),  # 02:00 CEST (not 02:00 CET at 01:00Z)
        z("2026-10-25 03:00"),  # 04:00 CET
    ]


def test_berlin_half_past_every_hour_skips_the_missing_hour_only() -> None:
    got = occurrences("30 * * * *", "Europe/Berlin", z("2026-03-28 23:10"), count=3)
    assert got == [
        z("2026-03-28 23:30"),  # 03-29 00:30 CET
        z("2026-03-29 00:30"),  # 01:30 CET
        z("2026-03-29 01:30"),  # 03:30 CEST (02:30 does not exist; no extra 03:00)
    ]


def test_berlin_two_local_times_collapsing_into_the_gap_fire_once() -> None:
    # 02:00 (missing -> 03:00) and 03:00 are the same instant on 03-29: one fire.
    got = occurrences("0 2,3 * * *", "Europe/Berlin", z("2026-03-28 23:30"), count=3)
    assert got == [
        z("2026-03-29 01:00"),  # 03:00 CEST
        z("2026-03-30 00:00"),  # 03-30 02:00 CEST
        z("2026-03-30 01:00"),  # 03-30 03:00 CEST
    ]


# --- America/New_York ------------------------------------------------------------------


def test_new_york_spring_hourly_once_per_real_hour() -> None:
    got = occurrences("0 * * * *", "America/New_York", z("2026-03-08 04:30"), count=4)
    assert got == [
        z("2026-03-08 05:00"),  # 00:00 EST
        z("2026-03-08 06:00"),  # 01:00 EST
        z("2026-03-08 07:00"),  # 03:00 EDT (02:00 does not exist)
        z("2026-03-08 08:00"),  # 04:00 EDT
    ]


def test_new_york_spring_daily_in_gap_fires_at_gap_end() -> None:
    got = occurrences("30 2 * * *", "America/New_York", z("2026-03-06 12:00"), count=3)
    assert got == [
        z("2026-03-07 07:30"),  # 03-07 02:30 EST
        z("2026-03-08 07:00"),  # 03-08 02:30 does not exist -> 03:00 EDT
        z("2026-03-09 06:30"),  # 03-09 02:30 EDT
    ]


def test_new_york_fall_hourly_fires_in_both_repeated_hours() -> None:
    got = occurrences("0 * * * *", "America/New_York", z("2026-11-01 03:30"), count=5)
    assert got == [
        z("2026-11-01 04:00"),  # 00:00 EDT
        z("2026-11-01 05:00"),  # 01:00 EDT (first pass)
        z("2026-11-01 06:00"),  # 01:00 EST (second pass)
        z("2026-11-01 07:00"),  # 02:00 EST
        z("2026-11-01 08:00"),  # 03:00 EST
    ]


def test_new_york_fall_daily_repeated_time_fires_once_first() -> None:
    got = occurrences("30 1 * * *", "America/New_York", z("2026-10-30 12:00"), count=3)
    assert got == [
        z("2026-10-31 05:30"),  # 10-31 01:30 EDT
        z("2026-11-01 05:30"),  # 11-01 01:30 EDT (first occurrence; no 06:30Z)
        z("2026-11-02 06:30"),  # 11-02 01:30 EST
    ]


def test_new_york_fall_quarter_hours_fire_every_real_quarter() -> None:
    got = occurrences("*/15 * * * *", "America/New_York", z("2026-11-01 05:20"), count=10)
    assert got == [
        z("2026-11-01 05:30"),  # 01:30 EDT
        z("2026-11-01 05:45"),  # 01:45 EDT
        z("2026-11-01 06:00"),  # 01:00 EST (second pass)
        z("2026-11-01 06:15"),  # 01:15 EST
        z("2026-11-01 06:30"),  # 01:30 EST
        z("2026-11-01 06:45"),  # 01:45 EST
        z("2026-11-01 07:00"),  # 02:00 EST
        z("2026-11-01 07:15"),  # 02:15 EST
        z("2026-11-01 07:30"),  # 02:30 EST
        z("2026-11-01 07:45"),  # 02:45 EST
    ]


def test_new_york_spring_quarter_hours_skip_the_missing_hour() -> None:
    got = occurrences("*/15 * * * *", "America/New_York", z("2026-03-08 06:40"), count=3)
    assert got == [
        z("2026-03-08 06:45"),  # 01:45 EST
        z("2026-03-08 07:00"),  # 03:00 EDT
        z("2026-03-08 07:15"),  # 03:15 EDT
    ]


def test_next_occurrence_from_inside_the_first_pass_of_the_repeated_hour() -> None:
    tz = "America/New_York"
    after = z("2026-11-01 05:50")  # 01:50 EDT, first pass
    assert next_occurrence("0 * * * *", tz, after) == z("2026-11-01 06:00")  # 01:00 EST
    assert next_occurrence("30 * * * *", tz, after) == z("2026-11-01 06:30")  # 01:30 EST
    # fixed hour: 01:30 already fired at 05:30Z (first occurrence) -> tomorrow 01:30 EST
    assert next_occurrence("30 1 * * *", tz, after) == z("2026-11-02 06:30")
    # before the first 01:30 -> the first 01:30
    assert next_occurrence("30 1 * * *", tz, z("2026-11-01 05:10")) == z("2026-11-01 05:30")


def test_next_occurrence_from_inside_the_second_pass_of_the_repeated_hour() -> None:
    tz = "America/New_York"
    after = z("2026-11-01 06:10")  # 01:10 EST, second pass
    assert next_occurrence("30 1 * * *", tz, after) == z("2026-11-02 06:30")  # 11-02 01:30 EST
    assert next_occurrence("30 * * * *", tz, after) == z("2026-11-01 06:30")  # 01:30 EST
    assert next_occurrence("0 * * * *", tz, after) == z("2026-11-01 07:00")  # 02:00 EST


def test_chained_next_occurrence_matches_occurrences() -> None:
    tz = "America/New_York"
    start = z("2026-10-31 20:00")
    expected = occurrences("*/20 * * * *", tz, start, count=13 * 3)
    chained, t = [], start
    for _ in expected:
        t = next_occurrence("*/20 * * * *", tz, t)
        chained.append(t)
    assert chained == expected
    assert len(set(expected)) == 13 * 3  # 13 real hours, 3 fires each, none twice
    assert expected[-1] == z("2026-11-01 09:00")


# --- Australia/Sydney ------------------------------------------------------------------


def test_sydney_april_hourly_fires_in_both_repeated_hours() -> None:
    got = occurrences("0 * * * *", "Australia/Sydney", z("2026-04-04 13:30"), count=5)
    assert got == [
        z("2026-04-04 14:00"),  # 04-05 01:00 AEDT
        z("2026-04-04 15:00"),  # 02:00 AEDT (first pass)
        z("2026-04-04 16:00"),  # 02:00 AEST (second pass)
        z("2026-04-04 17:00"),  # 03:00 AEST
        z("2026-04-04 18:00"),  # 04:00 AEST
    ]


def test_sydney_april_daily_repeated_time_fires_once_first() -> None:
    got = occurrences("30 2 * * *", "Australia/Sydney", z("2026-04-03 12:00"), count=3)
    assert got == [
        z("2026-04-03 15:30"),  # 04-04 02:30 AEDT
        z("2026-04-04 15:30"),  # 04-05 02:30 AEDT (first occurrence; no 16:30Z)
        z("2026-04-05 16:30"),  # 04-06 02:30 AEST
    ]


def test_sydney_october_hourly_once_per_real_hour() -> None:
    got = occurrences("0 * * * *", "Australia/Sydney", z("2026-10-03 13:30"), count=4)
    assert got == [
        z("2026-10-03 14:00"),  # 10-04 00:00 AEST
        z("2026-10-03 15:00"),  # 01:00 AEST
        z("2026-10-03 16:00"),  # 03:00 AEDT (02:00 does not exist)
        z("2026-10-03 17:00"),  # 04:00 AEDT
    ]


def test_sydney_october_daily_in_gap_fires_at_gap_end() -> None:
    got = occurrences("30 2 * * *", "Australia/Sydney", z("2026-10-02 12:00"), count=3)
    assert got == [
        z("2026-10-02 16:30"),  # 10-03 02:30 AEST
        z("2026-10-03 16:00"),  # 10-04 02:30 does not exist -> 03:00 AEDT
        z("2026-10-04 15:30"),  # 10-05 02:30 AEDT
    ]


# --- general contract ------------------------------------------------------------------


def test_results_are_aware_utc_and_strictly_after_start() -> None:
    start = z("2026-06-01 10:00")  # an occurrence itself: excluded
    got = occurrences("0 * * * *", "UTC", start, count=2)
    assert got == [z("2026-06-01 11:00"), z("2026-06-01 12:00")]
    assert all(t.tzinfo is UTC for t in got)
    nxt = next_occurrence("0 12 * * *", "Europe/Berlin", z("2026-06-01 09:59:59"))
    assert nxt == z("2026-06-01 10:00")  # 12:00 CEST
    assert nxt.tzinfo is UTC
    # an aware start in another zone means the same instant
    other = datetime.fromisoformat("2026-06-01T11:59:59+02:00")
    assert next_occurrence("0 12 * * *", "Europe/Berlin", other) == z("2026-06-01 10:00")


def test_occurrences_bounds() -> None:
    start = z("2026-06-01 00:00")
    assert occurrences("0 * * * *", "UTC", start, count=3) == [
        z("2026-06-01 01:00"),
        z("2026-06-01 02:00"),
        z("2026-06-01 03:00"),
    ]
    assert occurrences("0 * * * *", "UTC", start, count=0) == []
    with pytest.raises(ValueError):
        occurrences("0 * * * *", "UTC", start, count=-1)


def test_naive_instants_are_refused() -> None:
    with pytest.raises(ValueError):
        next_occurrence("0 * * * *", "UTC", datetime(2026, 6, 1))


def test_unknown_timezone_is_a_schedule_error() -> None:
    with pytest.raises(ScheduleError, match="unknown timezone 'Mars/Base'"):
        next_occurrence("0 * * * *", "Mars/Base", z("2026-06-01 00:00"))


def test_day_of_month_and_day_of_week_are_or_ed() -> None:
    # 2026-01-01 is a Thursday: the 1st OR any Monday (AND would first give 2026-06-01).
    got = occurrences("0 0 1 * mon", "UTC", z("2025-12-31 12:00"), count=3)
    assert got == [z("2026-01-01 00:00"), z("2026-01-05 00:00"), z("2026-01-12 00:00")]


def test_aliases_and_every_hour_detection() -> None:
    assert validate_cron("@DAILY") == "@daily"
    assert next_occurrence("@hourly", "UTC", z("2026-06-01 10:15")) == z("2026-06-01 11:00")
    assert next_occurrence("@daily", "Europe/Berlin", z("2026-06-01 10:15")) == z(
        "2026-06-01 22:00"  # 06-02 00:00 CEST
    )
    assert is_every_hour("0 * * * *")
    assert is_every_hour("*/15 * * * *")
    assert is_every_hour("0 0-23 * * *")
    assert is_every_hour("0 */1 * * *")
    assert is_every_hour("@hourly")
    assert not is_every_hour("0 */2 * * *")
    assert not is_every_hour("30 1 * * *")
    assert not is_every_hour("0 1-23 * * *")


def test_leap_day_schedule_is_valid_and_fires_in_leap_years() -> None:
    assert next_occurrence("0 0 29 2 *", "UTC", z("2026-01-01 00:00")) == z("2028-02-29 00:00")


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("61 * * * *", "minute field '61'"),
        ("0 24 * * *", "hour field '24'"),
        ("0 0 0 * *", "day-of-month field '0'"),
        ("0 0 * 13 *", "month field '13'"),
        ("0 0 * * 8", "day-of-week field '8'"),
        ("*/0 * * * *", "minute field"),
        ("1,2,,3 * * * *", "minute field"),
        ("0 0 * * * *", "6 fields"),
        ("0 0 1 1 * 2027", "6 fields"),
        ("* * * * * * *", "7 fields"),
        ("0 0 31 2 *", "can never fire"),
        ("0 0 30 2 *", "can never fire"),
        ("0 0 31 4,6,9,11 *", "can never fire"),
        ("junk", "1 field"),
        ("a b c d e", "minute field 'a'"),
        ("", "empty"),
        ("   ", "empty"),
        ("@reboot", "unknown alias"),
        ("@daily 5", "unknown alias"),
        ("H * * * *", "hashed"),
        ("R 3 * * *", "random"),
        ("0\x00 0 * * *", "control characters"),
        ("0 0 * * *\n* * * * *", "control characters"),
        ("0 0 * * \x1b[31m", "control characters"),
        ("0 0 * * " + "1," * 120 + "1", "longer than 200"),
        ("０ 0 * * *", "non-ASCII"),
    ],
)
def test_invalid_cron_is_rejected_with_one_clear_line(expr: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as info:
        validate_cron(expr)
    message = str(info.value)
    assert message.startswith("invalid cron expression '")
    assert fragment in message
    assert "\n" not in message and "Traceback" not in message


def test_invalid_cron_is_rejected_by_next_occurrence_too() -> None:
    with pytest.raises(ScheduleError, match="can never fire"):
        next_occurrence("0 0 31 2 *", "UTC", z("2026-01-01 00:00"))


def test_valid_cron_is_normalized() -> None:
    assert validate_cron("  0   2\t* * mon-fri ") == "0 2 * * mon-fri"
    assert validate_cron("30 2 * * *") == "30 2 * * *"
    assert validate_cron("0 0 L * *") == "0 0 L * *"
    # Day 31 never occurs in February, but Mondays do: OR semantics make it valid.
    assert validate_cron("0 0 31 2 mon") == "0 0 31 2 mon"
