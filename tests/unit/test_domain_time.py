"""Instants, zones and local wall times (goalsui.domain.timeutil)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from goalsui.domain.timeutil import (
    ensure_utc,
    load_zone,
    localize,
    parse_instant,
    utcnow,
    wall_instants,
)
from goalsui.errors import ScheduleError


def z(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_utcnow_is_aware_utc_and_current() -> None:
    now = utcnow()
    assert now.tzinfo is UTC
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_ensure_utc() -> None:
    berlin = datetime(2026, 12, 1, 19, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    out = ensure_utc(berlin)
    assert out == z("2026-12-01 18:00") and out.tzinfo is UTC
    with pytest.raises(ValueError):
        ensure_utc(datetime(2026, 12, 1, 18, 0))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-02T18:00:00+00:00", z("2026-12-02 18:00")),
        ("2026-12-02T18:00:00Z", z("2026-12-02 18:00")),
        ("2026-12-02T18:00Z", z("2026-12-02 18:00")),
        ("2026-12-02t18:00z", z("2026-12-02 18:00")),
        ("2026-12-02 18:00:00Z", z("2026-12-02 18:00")),
        ("2026-12-02T19:00:00+01:00", z("2026-12-02 18:00")),
        ("2026-12-02T13:00-05:00", z("2026-12-02 18:00")),
        ("  2026-12-02T18:00:00.250Z  ", z("2026-12-02 18:00:00.250")),
    ],
)
def test_parse_instant_with_offset(text: str, expected: datetime) -> None:
    got = parse_instant(text)
    assert got == expected
    assert got.tzinfo is UTC


def test_parse_instant_offset_wins_over_tz() -> None:
    assert parse_instant("2026-12-02T18:00Z", tz="Asia/Tokyo") == z("2026-12-02 18:00")


def test_parse_instant_naive_with_tz() -> None:
    # 19:00 CET = 18:00Z
    assert parse_instant("2026-12-02T19:00", tz="Europe/Berlin") == z("2026-12-02 18:00")
    assert parse_instant("2026-12-02 19:00", tz="Europe/Berlin") == z("2026-12-02 18:00")
    # a bare date is midnight local: 00:00 EST = 05:00Z
    assert parse_instant("2026-12-02", tz="America/New_York") == z("2026-12-02 05:00")


def test_parse_instant_in_spring_gap_moves_to_gap_end() -> None:
    # 02:30 does not exist in Berlin on 03-29 -> 03:00 CEST = 01:00Z
    assert parse_instant("2026-03-29T02:30", tz="Europe/Berlin") == z("2026-03-29 01:00")
    # 02:00 is the gap's first missing minute -> 03:00 CEST as well
    assert parse_instant("2026-03-29T02:00", tz="Europe/Berlin") == z("2026-03-29 01:00")
    # 02:15 does not exist in New York on 03-08 -> 03:00 EDT = 07:00Z
    assert parse_instant("2026-03-08T02:15", tz="America/New_York") == z("2026-03-08 07:00")
    # 02:30 does not exist in Sydney on 10-04 -> 03:00 AEDT = 10-03 16:00Z
    assert parse_instant("2026-10-04T02:30", tz="Australia/Sydney") == z("2026-10-03 16:00")


def test_parse_instant_in_repeated_hour_takes_first_occurrence() -> None:
    # 01:30 happens twice in New York on 11-01: first is EDT (05:30Z), not EST (06:30Z)
    assert parse_instant("2026-11-01T01:30", tz="America/New_York") == z("2026-11-01 05:30")
    # 02:30 happens twice in Berlin on 10-25: first is CEST (00:30Z)
    assert parse_instant("2026-10-25T02:30", tz="Europe/Berlin") == z("2026-10-25 00:30")
    # 02:30 happens twice in Sydney on 04-05: first is AEDT (04-04 15:30Z)
    assert parse_instant("2026-04-05T02:30", tz="Australia/Sydney") == z("2026-04-04 15:30")


def test_parse_instant_naive_without_tz_is_refused_with_a_hint() -> None:
    with pytest.raises(ScheduleError) as info:
        parse_instant("2026-12-01T10:00")
    assert str(info.value) == (
        "timestamp '2026-12-01T10:00' has no UTC offset; add one (e.g. +01:00 or Z) or pass --tz"
    )


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01",
        "2026-02-30T10:00Z",
        "2026-12-01T25:00Z",
        "tomorrow",
        "",
        "   ",
        "2026-12-01X10:00Z",
        "2026-12-01T10:00+25:00",
        "2026-12-01T10:00\nZ",
        "2026-12-01T10:00\x00Z",
        "9" * 500,
        "0001-01-01T00:00+01:00",
    ],
)
def test_parse_instant_invalid(text: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_instant(text, tz="UTC")
    message = str(info.value)
    assert message.startswith("invalid timestamp '")
    assert "\n" not in message and "\x00" not in message
    assert len(message) < 200


def test_parse_instant_message_names_the_problem() -> None:
    with pytest.raises(ScheduleError, match=r"^invalid timestamp '2026-13-01': .*month"):
        parse_instant("2026-13-01", tz="UTC")


def test_parse_instant_unknown_tz() -> None:
    with pytest.raises(ScheduleError, match="unknown timezone 'Mars/Base'"):
        parse_instant("2026-12-01T10:00", tz="Mars/Base")


def test_offset_text_round_trips_through_parse_instant() -> None:
    t = z("2026-03-29 01:00")
    assert parse_instant(t.isoformat()) == t
    assert parse_instant(t.astimezone(ZoneInfo("Australia/Sydney")).isoformat()) == t


def test_load_zone() -> None:
    assert load_zone("Europe/Berlin") == ZoneInfo("Europe/Berlin")
    assert load_zone("UTC").utcoffset(datetime(2026, 1, 1)) == timedelta(0)


@pytest.mark.parametrize(
    "name",
    [
        "Mars/Base",
        "",
        "Europe",
        "../../etc/passwd",
        "Europe/../Europe/Berlin",
        "/usr/share/zoneinfo/UTC",
        "Europe/Berlin\x00",
        "x" * 1000,
        "Europe\\Berlin",
    ],
)
def test_load_zone_rejects_unknown_and_unsafe_names(name: str) -> None:
    with pytest.raises(ScheduleError) as info:
        load_zone(name)
    assert str(info.value).startswith("unknown timezone '")
    assert "\x00" not in str(info.value)


def test_load_zone_message() -> None:
    with pytest.raises(ScheduleError) as info:
        load_zone("Mars/Base")
    assert str(info.value) == "unknown timezone 'Mars/Base'"


def test_wall_instants_classifies_local_times() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    assert wall_instants(datetime(2026, 3, 29, 2, 30), berlin) == ()  # gap
    assert wall_instants(datetime(2026, 10, 25, 2, 30), berlin) == (
        z("2026-10-25 00:30"),  # 02:30 CEST
        z("2026-10-25 01:30"),  # 02:30 CET
    )
    assert wall_instants(datetime(2026, 6, 1, 12, 0), berlin) == (z("2026-06-01 10:00"),)


def test_localize_with_fixed_offset_zone() -> None:
    plus2 = timezone(timedelta(hours=2))
    assert localize(datetime(2026, 3, 29, 2, 30), plus2) == z("2026-03-29 00:30")
