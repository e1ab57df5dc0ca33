"""Hypothesis against the real listener over real HTTP: forged, truncated, replayed,
stale, future, oversized, mistyped deliveries. Never a 500 or a stack trace, always a
small JSON answer, and an event row only for a validly signed JSON object or array."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goalsui.domain.text import strip_nul_deep
from goalsui.hooks import signing
from goalsui.service import Service
from goalsui.store.models import Event
from tests.base_kit import REPO, FakeClock
from tests.hooks_kit import (
    CI_ENV,
    GITHUB_ENV,
    OTHER_SECRET,
    SECRET,
    ThreadedListener,
    post,
    raw_request,
    row_counts,
    signed,
)

NOW = 1_900_000_000
DELIVERIES = itertools.count()
HTTP = settings(
    max_examples=80,
    deadline=5000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, ThreadedListener]]:
    root = tmp_path_factory.mktemp("fuzzhooks")
    shutil.copytree(REPO / "sample_kb", root / "kb")
    service = Service.open(root / "kb", None, root / "state", clock=FakeClock())
    service.intents.create(title="any ci", kind="event", event_source="ci")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CI_ENV, SECRET)
        mp.setenv(GITHUB_ENV, OTHER_SECRET)
        with ThreadedListener(service, clock=lambda: NOW) as server:
            yield service, server
    service.close()


def _strict(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def check_answer(status: int, answer: dict) -> None:
    assert status in (202, 400, 401, 404, 409, 413), (status, answer)
    assert "_raw" not in answer, answer  # always JSON
    if status != 202:
        assert isinstance(answer.get("error"), str) and "\n" not in answer["error"]
        assert "Traceback" not in answer["error"] and SECRET not in answer["error"]


header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80
)  # what http.client will send
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    json_values.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8")),
)


@HTTP
@given(
    body=bodies,
    source=st.sampled_from(["ci", "github", "nope", "CI", "c%2Fi", "ci%00"]),
    sig=st.one_of(st.none(), header_text, st.from_regex(r"\Asha256=[0-9a-fA-F]{0,70}\Z")),
    ts=st.one_of(st.none(), header_text, st.integers(-(10**12), 10**13).map(str)),
    delivery=st.one_of(st.none(), header_text),
    ctype=st.sampled_from(
        [None, "application/json", "text/plain", "application/x-www-form-urlencoded", "x"]
    ),
)
def test_forged_deliveries_are_refused_and_store_nothing(
    hook: tuple[Service, ThreadedListener],
    body: bytes,
    source: str,
    sig: str | None,
    ts: str | None,
    delivery: str | None,
    ctype: str | None,
) -> None:
    service, server = hook
    events = row_counts(service)["event"]
    headers = {}
    for name, value in (
        (signing.SIGNATURE, sig),
        (signing.GITHUB_SIGNATURE, sig),
        (signing.TIMESTAMP, ts),
        (signing.DELIVERY, delivery),
        (signing.GITHUB_DELIVERY, delivery),
        ("Content-Type", ctype),
    ):
        if value is not None:
            headers[name] = value
    status, answer = post(server.port, f"/hooks/{source}", body, headers)
    check_answer(status, answer)
    assert status in (400, 401, 404, 413)
    assert row_counts(service)["event"] == events


@HTTP
@given(
    body=bodies,
    skew=st.integers(-1000, 1000),
    style=st.sampled_from(["goalsui", "github"]),
)
def test_signed_deliveries_are_stored_once_when_fresh_and_well_formed(
    hook: tuple[Service, ThreadedListener], body: bytes, skew: int, style: str
) -> None:
    service, server = hook
    source, secret = ("github", OTHER_SECRET) if style == "github" else ("ci", SECRET)
    delivery = f"fuzz-{next(DELIVERIES)}"  # unique across examples (the database persists)
    headers = signed(body, delivery, secret=secret, style=style, timestamp=NOW + skew)
    before = row_counts(service)
    status, answer = post(server.port, f"/hooks/{source}", body, headers)
    check_answer(status, answer)
    try:
        parsed = json.loads(body, parse_constant=_strict)
        well_formed = isinstance(parsed, dict | list)
    except ValueError:
        well_formed = False
    fresh = style == "github" or abs(skew) <= signing.TOLERANCE_S
    if not fresh:
        assert status == 401
    elif well_formed:
        assert status == 202, answer
        # stored as sent, NUL stripped (PostgreSQL cannot hold it; both engines alike)
        assert service.get(Event, answer["event_id"], "event").payload == strip_nul_deep(parsed)
        # Replayed as is: a duplicate, nothing more is stored.
        again, replay = post(server.port, f"/hooks/{source}", body, headers)
        assert (again, replay["event_id"]) == (409, answer["event_id"])
        assert row_counts(service)["event"] == before["event"] + 1
        return
    else:
        assert status == 400
    assert row_counts(service) == before


@HTTP
@given(cut=st.integers(0, 200), extra=st.integers(1, 5000))
def test_truncated_bodies_store_nothing(
    hook: tuple[Service, ThreadedListener], cut: int, extra: int
) -> None:
    service, server = hook
    body = json.dumps({"pad": "x" * 200}).encode()
    headers = signed(body, f"trunc-{cut}-{extra}", timestamp=NOW)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    events = row_counts(service)["event"]
    request = (
        f"POST /hooks/ci HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body) + extra}\r\n{head}\r\n"
    ).encode() + body[:cut]
    answer = raw_request(server.port, request)
    assert b"Traceback" not in answer and b" 500 " not in answer.split(b"\r\n", 1)[0]
    assert row_counts(service)["event"] == events


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
        b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n",
        b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"POST /hooks/ci HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n",
        b"POST /hooks/../../etc/passwd HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /hooks/ci%2F..%2F HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
    ],
)
def test_malformed_http_is_answered_without_a_crash(
    hook: tuple[Service, ThreadedListener], request_bytes: bytes
) -> None:
    service, server = hook
    events = row_counts(service)["event"]
    answer = raw_request(server.port, request_bytes)
    assert b"Traceback" not in answer
    status_line = answer.split(b"\r\n", 1)[0]
    assert b" 500 " not in status_line and b" 202 " not in status_line
    assert row_counts(service)["event"] == events
    status, health = post(server.port, "/healthz", b"")  # still serving (405: POST)
    assert status == 405 and "error" in health
