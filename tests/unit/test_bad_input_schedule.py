"""Hostile cron strings, timezones, durations and ISO timestamps: each is either valid or
a one-line ScheduleError; creating an intent from them changes nothing when refused."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goalsui.domain.cron import next_occurrence, validate_cron
from goalsui.domain.durations import MAX_DURATION, parse_duration
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.errors import GoalsuiError, ScheduleError
from goalsui.service import Service
from goalsui.service.overview import schedule_preview
from tests.base_kit import REPO, FakeClock
from tests.hooks_kit import row_counts, tree_snapshot

FAST = settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
SLOWER = settings(max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Apia",
]

cron_text = st.text(
    alphabet="0123456789*/,-LW#?HR@ abcdefghijklmnopqrstuvwxyzMONTUE\t\n\x00", max_size=40
)
hostile = st.one_of(
    st.text(max_size=80),
    st.text(st.characters(codec=None), max_size=20),
    st.sampled_from(
        ["", " ", "\x00", "\x1b[31m", "../" * 20, "/etc/passwd", "９", "\u202e", "a" * 5000]
    ),
)


def one_line(exc: BaseException) -> None:
    assert isinstance(exc, GoalsuiError)
    text = str(exc)
    assert text and "\n" not in text and len(text) < 500
    assert "\x00" not in text and "\x1b" not in text


# --- cron -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "* * * *",
        "* * * * * * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "0 0 30 2 *",
        "*/0 * * * *",
        "0 0 * * MON#6",
        "@every 5m",
        "@reboot",
        "H * * * *",
        "R * * * *",
        "٣ * * * *",
        "0 0 * * *\x00",
        "0 0 * * *; rm -rf /",
        "9" * 300,
        "-1 * * * *",
        "1,2,,3 * * * *",
        "a-b * * * *",
    ],
)
def test_bad_cron_is_a_one_line_error(expr: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_cron(expr)
    one_line(caught.value)


@FAST
@given(st.one_of(cron_text, hostile))
def test_any_cron_text_validates_or_fails_cleanly(expr: str) -> None:
    try:
        normal = validate_cron(expr)
    except ScheduleError as exc:
        one_line(exc)
        return
    assert isinstance(normal, str) and "\n" not in normal


@SLOWER
@given(
    st.sampled_from(
        [
            "0 9 * * *",
            "30 2 * * *",
            "*/7 * * * *",
            "0 0 29 2 *",
            "15 1 * * 0",
            "@daily",
            "59 23 31 12 *",
        ]
    ),
    st.sampled_from(ZONES),
    st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2400, 1, 1), timezones=st.just(UTC)
    ),
)
def test_next_occurrence_is_after_or_a_clear_error(expr: str, zone: str, after: datetime) -> None:
    try:
        nxt = next_occurrence(expr, zone, after)
    except ScheduleError as exc:
        one_line(exc)
        return
    assert nxt.tzinfo is not None and nxt.utcoffset() == timedelta(0)
    assert nxt > after


# --- timezones ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "",
        " ",
        "Mars/Olympus",
        "../../../../etc/passwd",
        "/etc/localtime",
        "Europe/../Europe/Berlin",
        "Europe\\Berlin",
        "UTC\x00",
        "a" * 300,
        "Europe/Berlin/",
        ".",
        "..",
        "Europe",
        "Europe／Berlin",
        "Europe∕Berlin",
        None,
        5,
        ["UTC"],
    ],
)
def test_bad_timezone_is_a_one_line_error(name: object) -> None:
    with pytest.raises(ScheduleError) as caught:
        load_zone(name)  # type: ignore[arg-type]  # bad input on purpose
    one_line(caught.value)


@FAST
@given(hostile)
def test_any_timezone_name_loads_or_fails_cleanly(name: str) -> None:
    try:
        zone = load_zone(name)
    except ScheduleError as exc:
        one_line(exc)
        return
    datetime(2026, 6, 1, tzinfo=zone).utcoffset()  # a real zone that works


# --- durations ------------------------------------------------------------------------------------


@FAST
@given(
    st.one_of(
        hostile,
        st.from_regex(r"\A[0-9.]{0,6}[dhmsDHMSx ]{0,2}([0-9.]{0,6}[dhms])?\Z"),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.none(),
    )
)
def test_any_duration_parses_into_range_or_fails_cleanly(value: object) -> None:
    try:
        td = parse_duration(value)  # type: ignore[arg-type]  # any input, on purpose
    except ScheduleError as exc:
        one_line(exc)
        return
    assert timedelta(0) < td <= MAX_DURATION


# --- ISO timestamps -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "tomorrow",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-12-01T25:00:00Z",
        "2026-12-01T00:00:00+25:00",
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+01:00",
        "2026-12-01T00:00:00Z\x00",
        "2026-12-01T00:00:00Z\n2027",
        "２０２６-12-01T00:00:00Z",
        "2026-12-01 00:00:00 UTC",
        "1e10",
        "-1",
        "2026-W99",
        "+002026-12-01",
        "2026-12-01T00:00:00ZZ",
    ],
)
def test_bad_timestamp_is_a_one_line_error(text: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_instant(text, "UTC")
    one_line(caught.value)


@FAST
@given(hostile, st.sampled_from([*ZONES, None]))
def test_any_timestamp_parses_to_aware_utc_or_fails_cleanly(text: str, zone: str | None) -> None:
    try:
        instant = parse_instant(text, zone)
    except ScheduleError as exc:
        one_line(exc)
        return
    assert instant.utcoffset() == timedelta(0)


@FAST
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(ZONES),
)
def test_iso_round_trip_or_clean_error(wall: datetime, zone: str) -> None:
    try:
        instant = parse_instant(wall.isoformat(), zone)
    except ScheduleError as exc:
        one_line(exc)  # e.g. out of range after conversion
        return
    assert instant.utcoffset() == timedelta(0)


# --- through the service: a refused intent leaves no trace ----------------------------------------


@pytest.fixture(scope="module")
def intents_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("sched")
    shutil.copytree(REPO / "sample_kb", root / "kb")
    service = Service.open(root / "kb", None, root / "state", clock=FakeClock())
    yield service
    service.close()


@SLOWER
@given(
    kind=st.sampled_from(["cron", "at", "heartbeat", "event", "bogus"]),
    schedule=st.one_of(st.none(), hostile, cron_text),
    tz=st.one_of(st.sampled_from(ZONES), hostile),
    expires=st.one_of(st.none(), hostile, st.just("2026-12-01T00:00:00Z")),
    cooldown=st.one_of(st.none(), hostile),
    source=st.one_of(st.just("ci"), hostile),
)
def test_create_intent_refusals_change_nothing(
    intents_service: Service,
    kind: str,
    schedule: str | None,
    tz: str,
    expires: str | None,
    cooldown: str | None,
    source: str,
) -> None:
    service = intents_service
    rows, tree = row_counts(service), tree_snapshot(service.kb.root)
    try:
        intent = service.intents.create(
            title="fuzz",
            instruction="x",
            kind=kind,
            schedule=schedule,
            timezone=tz,
            expires_at=expires,
            cooldown=cooldown,
            event_source=source if kind == "event" else None,
        )
    except GoalsuiError as exc:
        one_line(exc)
        assert row_counts(service) == rows
    else:
        assert intent.id is not None and intent.kind == kind
        assert intent.next_run_at is None or intent.next_run_at.utcoffset() == timedelta(0)
    assert tree_snapshot(service.kb.root) == tree


@SLOWER
@given(
    expr=st.one_of(cron_text, hostile),
    tz=st.one_of(st.sampled_from(ZONES), hostile),
    count=st.integers(-5, 2000),
)
def test_schedule_preview_answers_or_fails_cleanly(
    intents_service: Service, expr: str, tz: str, count: int
) -> None:
    try:
        result = schedule_preview(expr, tz=tz, count=count, now=intents_service.now())
    except GoalsuiError as exc:
        one_line(exc)
        return
    assert 1 <= len(result["occurrences"]) <= count


def test_instants_are_compared_in_utc() -> None:
    berlin = parse_instant("2026-03-29T02:30:00", "Europe/Berlin")  # inside the spring gap
    assert berlin == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
