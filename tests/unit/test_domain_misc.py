"""Durations, checklists, event filter matching and retry backoff."""

from __future__ import annotations

from datetime import timedelta

import pytest

from goalsui.domain.backoff import retry_delay
from goalsui.domain.checklist import checklist_is_empty, parse_markdown_checklist
from goalsui.domain.durations import format_duration, parse_duration
from goalsui.domain.matching import filter_matches
from goalsui.errors import ScheduleError

# --- durations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("10m", 600),
        ("2h", 7200),
        ("1d", 86400),
        ("1h30m", 5400),
        ("1d2h3m4s", 93784),
        ("1h 30m", 5400),
        ("2H", 7200),
        ("1.5h", 5400),
        (" 45s ", 45),
        ("90", 90),
        ("366d", 366 * 86400),
        (90, 90),
        (2.5, 2.5),
    ],
)
def test_parse_duration_accepts(text: str | int | float, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("10x", "use a number followed by s, m, h or d"),
        ("", "empty"),
        ("   ", "empty"),
        ("m", "use a number"),
        ("-5m", "greater than zero"),
        ("0s", "greater than zero"),
        ("0", "greater than zero"),
        ("0h0m", "greater than zero"),
        (0, "greater than zero"),
        (-3, "greater than zero"),
        (float("nan"), "greater than zero"),
        (float("inf"), "366 days"),
        (10**400, "366 days"),
        ("367d", "366 days"),
        ("9999999999h", "366 days"),
        ("30m1h", "largest first"),
        ("1h1h", "largest first"),
        ("1e3s", "use a number"),
        ("ten minutes", "use a number"),
        (True, "use a number"),
    ],
)
def test_parse_duration_rejects(text: object, fragment: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_duration(text)  # type: ignore[arg-type]  # bad input on purpose
    message = str(info.value)
    assert message.startswith("invalid duration '")
    assert fragment in message


def test_parse_duration_message_is_the_documented_one() -> None:
    with pytest.raises(ScheduleError) as info:
        parse_duration("10x")
    assert str(info.value) == (
        "invalid duration '10x': use a number followed by s, m, h or d (e.g. 30s, 10m, 2h, 1d)"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (59.9, "59s"),
        (60, "1m"),
        (12 * 60, "12m"),
        (12 * 60 + 5, "12m05s"),
        (3600, "1h"),
        (2 * 3600 + 5 * 60, "2h05m"),
        (2 * 3600 + 5 * 60 + 59, "2h05m"),
        (86400, "1d"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (3 * 86400 + 4 * 3600 + 59 * 60, "3d4h"),
        (-90, "-1m30s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(timedelta(seconds=seconds)) == text


def test_format_parse_round_trip_for_whole_units() -> None:
    for text in ["45s", "12m", "2h05m", "3d4h", "1d"]:
        assert format_duration(parse_duration(text)) == text


# --- checklists ------------------------------------------------------------------------


def test_parse_markdown_checklist() -> None:
    text = """# Night checks

- [ ] look at the CI queue
- [x] rotate the logs
* [X]   read the alerts inbox  \n\
+ [ ] plus bullets count too
  - [ ] nested item
- plain bullet, no box
- [ ]
- [y] not a box
[ ] no bullet
Some prose.
"""
    assert parse_markdown_checklist(text) == [
        ("look at the CI queue", False),
        ("rotate the logs", True),
        ("read the alerts inbox", True),
        ("plus bullets count too", False),
        ("nested item", False),
    ]


def test_parse_markdown_checklist_empty_inputs() -> None:
    assert parse_markdown_checklist("") == []
    assert parse_markdown_checklist(None) == []
    assert parse_markdown_checklist("no boxes here\n- just a list") == []


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "\n\n   \n",
        "# Heartbeat\n\n## Checks\n",
        "# Heartbeat\n- [ ]\n- [ ]   \n* [x]\n",
        "<!-- add items below -->\n# H\n",
        "# H\n<!--\n- [ ] commented out item\nmore notes\n-->\n- [ ]\n",
        "-\n*\n",
        "<!-- unclosed comment\n- [ ] hidden\n",
    ],
)
def test_checklist_is_empty(text: str | None) -> None:
    assert checklist_is_empty(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "- [ ] check disk space",
        "# Heartbeat\n- [ ]\n- [x] done thing\n",
        "# Heartbeat\nLook at the failed runs.\n",
        "<!-- note --> check the queue",
        "<!-- a -->\n- [ ] real item\n<!-- b -->",
        "#hashtag is text, not a heading",
        "- plain bullet with text",
    ],
)
def test_checklist_is_not_empty(text: str) -> None:
    assert checklist_is_empty(text) is False


# --- event filter matching -------------------------------------------------------------

PAYLOAD = {
    "action": "opened",
    "number": 7,
    "draft": False,
    "labels": [{"name": "bug"}, {"name": "urgent"}],
    "tags": ["a", "b", "c"],
    "repo": {"name": "goalsui", "owner": {"login": "ops"}},
    "note": None,
}


@pytest.mark.parametrize(
    "flt",
    [
        None,
        {},
        {"action": "opened"},
        {"number": 7},
        {"number": 7.0},
        {"draft": False},
        {"note": None},
        {"repo": {"owner": {"login": "ops"}}},
        {"repo": {}},
        {"labels": [{"name": "urgent"}]},
        {"labels": [{"name": "urgent"}, {"name": "bug"}]},
        {"tags": ["c", "a"]},
        {"tags": []},
        {"action": "opened", "repo": {"name": "goalsui"}, "tags": ["b"]},
    ],
)
def test_filter_matches(flt: dict | None) -> None:
    assert filter_matches(flt, PAYLOAD) is True


@pytest.mark.parametrize(
    "flt",
    [
        {"action": "closed"},
        {"missing": None},
        {"number": "7"},
        {"draft": 0},  # false is not 0
        {"number": True},
        {"repo": {"owner": {"login": "someone"}}},
        {"repo": "goalsui"},
        {"repo": {"name": {"x": 1}}},
        {"labels": [{"name": "wontfix"}]},
        {"labels": [{"name": "bug"}, {"name": "wontfix"}]},
        {"tags": "a"},  # a scalar must be equal, not contained
        {"action": ["opened"]},  # a list filter needs a list
        {"note": "x"},
        {"repo": None},
    ],
)
def test_filter_does_not_match(flt: dict) -> None:
    assert filter_matches(flt, PAYLOAD) is False


def test_filter_against_non_dict_payloads() -> None:
    assert filter_matches(None, [1, 2]) is True
    assert filter_matches({}, "text") is True
    assert filter_matches({"a": 1}, [1]) is False
    assert filter_matches({"a": 1}, None) is False
    assert filter_matches({"a": 1}, "a") is False


def test_filter_with_bools_and_ints_in_lists() -> None:
    assert filter_matches({"xs": [1]}, {"xs": [True]}) is False
    assert filter_matches({"xs": [True]}, {"xs": [1, True]}) is True


# --- retry backoff ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "seconds"),
    [(1, 2), (2, 4), (3, 8), (5, 32), (8, 256), (9, 300), (20, 300)],
)
def test_retry_delay_default(n: int, seconds: float) -> None:
    assert retry_delay(n) == timedelta(seconds=seconds)


def test_retry_delay_custom_and_huge() -> None:
    assert retry_delay(3, base=3, cap=1000) == timedelta(seconds=27)
    assert retry_delay(4, base=1.5, cap=60) == timedelta(seconds=1.5**4)
    assert retry_delay(10, base=10, cap=60) == timedelta(seconds=60)
    assert retry_delay(10**6) == timedelta(seconds=300)
    assert retry_delay(10**18) == timedelta(seconds=300)
    assert retry_delay(2**70, base=2, cap=1) == timedelta(seconds=1)


@pytest.mark.parametrize("n", [0, -1])
def test_retry_delay_needs_a_failure(n: int) -> None:
    with pytest.raises(ValueError):
        retry_delay(n)
