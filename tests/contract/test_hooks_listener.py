"""The hook listener, judged with real HTTP requests to a real listener on 127.0.0.1.

Every refusal leaves zero event rows and zero runs; a valid signed delivery fires exactly
the matching event intents once; its replay fires nothing.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from goalsui.domain.text import strip_nul_deep
from goalsui.errors import GoalsuiError
from goalsui.hooks import signing
from goalsui.hooks.server import Listener, start_listener
from goalsui.service import Service
from goalsui.store.models import Event, Intent
from tests.base_kit import REPO, FakeClock
from tests.hooks_kit import (
    CI_ENV,
    GITHUB_ENV,
    OTHER_SECRET,
    SECRET,
    ThreadedListener,
    post,
    row_counts,
    signed,
    tree_snapshot,
)

NOW = 1_800_000_000  # the listener's fixed clock (Unix seconds)
BODY = json.dumps({"ref": "refs/heads/main", "action": "completed", "repo": "goalsui"}).encode()


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CI_ENV, SECRET)
    monkeypatch.setenv(GITHUB_ENV, OTHER_SECRET)


@pytest.fixture
async def listener(service: Service, secrets_env: None) -> AsyncIterator[Listener]:
    server = await start_listener(service, "127.0.0.1", 0, clock=lambda: NOW)
    yield server
    await server.close()


@pytest.fixture
def intents(service: Service) -> dict[str, int]:
    """Event intents: two match BODY, the others must not fire."""

    def make(title: str, source: str, event_filter: dict | None = None) -> int:
        intent = service.intents.create(
            title=title,
            instruction=f"handle {title}",
            kind="event",
            event_source=source,
            event_filter=event_filter,
        )
        return intent.id

    ids = {
        "main": make("ci on main", "ci", {"ref": "refs/heads/main"}),
        "any": make("any ci event", "ci"),
        "dev": make("ci on dev", "ci", {"ref": "refs/heads/dev"}),
        "github": make("github push", "github", {"ref": "refs/heads/main"}),
        "paused": make("paused ci", "ci"),
    }
    service.intents.pause(ids["paused"])
    return ids


async def send(
    listener: Listener,
    body: bytes | Any,
    headers: dict[str, str] | None = None,
    *,
    source: str = "ci",
    path: str | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, Any]]:
    url = listener.url + (path if path is not None else f"/hooks/{source}")
    async with (
        aiohttp.ClientSession(trust_env=False) as http,
        http.request(method, url, data=body, headers=headers or {}) as response,
    ):
        text = await response.text()
        assert "Traceback" not in text
        return response.status, json.loads(text)


def intent_state(service: Service) -> dict[int, tuple]:
    return {
        i.id: (i.status, i.next_run_at, i.pending_trigger, i.pending_event_id, i.last_fired_at)
        for i in service.intents.list()
    }


# --- a valid delivery ---------------------------------------------------------------------


async def test_valid_delivery_fires_matching_intents_once_and_replay_fires_nothing(
    service: Service, listener: Listener, intents: dict[str, int]
) -> None:
    status, answer = await send(listener, BODY, signed(BODY, "delivery-1", timestamp=NOW))
    assert status == 202, answer
    assert sorted(answer["fired"]) == sorted([intents["main"], intents["any"]])
    event_id = answer["event_id"]

    [event] = service.events.list()
    assert (event.id, event.source, event.delivery_id) == (event_id, "ci", "delivery-1")
    assert event.payload == json.loads(BODY)
    assert sorted(event.matched_intent_ids) == sorted(answer["fired"])
    for key in ("main", "any"):
        intent: Intent = service.intents.get(intents[key])
        assert intent.pending_trigger == "event"
        assert intent.pending_event_id == event_id
        assert intent.next_run_at == service.now()
    for key in ("dev", "github", "paused"):
        intent = service.intents.get(intents[key])
        assert intent.pending_trigger is None and intent.pending_event_id is None
    assert row_counts(service)["intent_run"] == 0  # the scheduler runs them, not the listener

    before = intent_state(service)
    # The same request again, and the same delivery re-signed later: duplicates by
    # delivery id, and neither fires anything.
    for headers in (
        signed(BODY, "delivery-1", timestamp=NOW),
        signed(BODY, "delivery-1", timestamp=NOW + 5),
    ):
        status, answer = await send(listener, BODY, headers)
        assert status == 409, answer
        assert answer == {"error": "duplicate delivery", "event_id": event_id}
    assert [e.id for e in service.events.list()] == [event_id]
    assert intent_state(service) == before


async def test_a_second_distinct_delivery_fires_again(
    service: Service, listener: Listener, intents: dict[str, int]
) -> None:
    # The same body in the same second under another delivery id is a new delivery.
    first = await send(listener, BODY, signed(BODY, "d-1", timestamp=NOW))
    second = await send(listener, BODY, signed(BODY, "d-2", timestamp=NOW))
    assert first[0] == second[0] == 202
    assert sorted(second[1]["fired"]) == sorted([intents["main"], intents["any"]])
    assert len(service.events.list()) == 2


@pytest.mark.parametrize("skew", [-300, -299, 0, 299, 300])
async def test_timestamps_inside_the_window_are_accepted(
    service: Service, listener: Listener, skew: int
) -> None:
    status, answer = await send(listener, BODY, signed(BODY, f"skew{skew}", timestamp=NOW + skew))
    assert status == 202, answer


async def test_github_style_source(
    service: Service, listener: Listener, intents: dict[str, int]
) -> None:
    headers = signed(BODY, "gh-1", secret=OTHER_SECRET, style="github")
    assert signing.GITHUB_SIGNATURE in headers and signing.TIMESTAMP not in headers
    status, answer = await send(listener, BODY, headers, source="github")
    assert status == 202, answer
    assert answer["fired"] == [intents["github"]]
    status, answer = await send(listener, BODY, headers, source="github")
    assert status == 409
    # goalsui-style headers are not GitHub's: refused.
    status, _ = await send(
        listener, BODY, signed(BODY, "gh-2", secret=OTHER_SECRET), source="github"
    )
    assert status == 401
    assert len(service.events.list()) == 1


async def test_concurrent_copies_of_one_delivery_store_one_event(
    service: Service, listener: Listener, intents: dict[str, int]
) -> None:
    headers = signed(BODY, "burst", timestamp=NOW)
    results = await asyncio.gather(*(send(listener, BODY, headers) for _ in range(12)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [202] + [409] * 11
    assert len(service.events.list()) == 1


async def test_concurrent_distinct_deliveries_are_all_stored(
    service: Service, listener: Listener
) -> None:
    bodies = [json.dumps({"n": n}).encode() for n in range(12)]
    results = await asyncio.gather(
        *(send(listener, b, signed(b, f"many-{n}", timestamp=NOW)) for n, b in enumerate(bodies))
    )
    assert [status for status, _ in results] == [202] * 12
    assert len(service.events.list()) == 12


# --- refusals -------------------------------------------------------------------------------


def _sig_only(headers: dict[str, str], **changes: str | None) -> dict[str, str]:
    out = dict(headers)
    for key, value in changes.items():
        name = {
            "sig": signing.SIGNATURE,
            "ts": signing.TIMESTAMP,
            "delivery": signing.DELIVERY,
        }.get(key, key)
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


GOOD = signed(BODY, "refused-1", timestamp=NOW)
BIG = b'{"pad": "' + b"x" * (signing.MAX_BODY_BYTES) + b'"}'


def _refusals() -> list[Any]:
    other = b'{"ref": "refs/heads/main", "action": "deleted"}'
    cases: list[tuple[str, int, str, bytes, dict[str, str]]] = [
        ("no headers", 401, "ci", BODY, {"Content-Type": "application/json"}),
        ("no signature", 401, "ci", BODY, _sig_only(GOOD, sig=None)),
        ("no timestamp", 401, "ci", BODY, _sig_only(GOOD, ts=None)),
        ("wrong secret", 401, "ci", BODY, signed(BODY, "r", secret=OTHER_SECRET, timestamp=NOW)),
        ("body tampered", 401, "ci", other, GOOD),
        ("body truncated", 401, "ci", BODY[:-5], GOOD),
        ("timestamp swapped", 401, "ci", BODY, _sig_only(GOOD, ts=str(NOW + 1))),
        ("non-hex signature", 401, "ci", BODY, _sig_only(GOOD, sig="sha256=" + "zz" * 32)),
        ("short signature", 401, "ci", BODY, _sig_only(GOOD, sig=GOOD[signing.SIGNATURE][:40])),
        ("no sha256= prefix", 401, "ci", BODY, _sig_only(GOOD, sig=GOOD[signing.SIGNATURE][7:])),
        ("sha1 signature", 401, "ci", BODY, _sig_only(GOOD, sig="sha1=" + "a" * 40)),
        ("empty signature", 401, "ci", BODY, _sig_only(GOOD, sig="")),
        ("timestamp not a number", 401, "ci", BODY, _sig_only(GOOD, ts="yesterday")),
        ("negative timestamp", 401, "ci", BODY, _sig_only(GOOD, ts="-5")),
        ("stale timestamp", 401, "ci", BODY, signed(BODY, "r", timestamp=NOW - 301)),
        ("future timestamp", 401, "ci", BODY, signed(BODY, "r", timestamp=NOW + 301)),
        ("ancient timestamp", 401, "ci", BODY, signed(BODY, "r", timestamp=0)),
        ("github without signature", 401, "github", BODY, {"X-GitHub-Delivery": "g"}),
        (
            "github wrong secret",
            401,
            "github",
            BODY,
            signed(BODY, "g", secret=SECRET, style="github"),
        ),
        ("unknown source", 404, "gitlab", BODY, GOOD),
        ("uppercase source", 404, "CI", BODY, GOOD),
        ("dotted source", 404, "ci.x", BODY, GOOD),
        ("too large, signed", 413, "ci", BIG, signed(BIG, "big", timestamp=NOW)),
        ("too large, unsigned", 413, "ci", BIG, {}),
        ("no delivery id", 400, "ci", BODY, _sig_only(GOOD, delivery=None)),
        ("delivery id with spaces", 400, "ci", BODY, _sig_only(GOOD, delivery="a b")),
        ("delivery id too long", 400, "ci", BODY, _sig_only(GOOD, delivery="x" * 201)),
        (
            "text/plain body",
            400,
            "ci",
            BODY,
            {**GOOD, "Content-Type": "text/plain"},
        ),
        (
            "form body",
            400,
            "ci",
            BODY,
            {**GOOD, "Content-Type": "application/x-www-form-urlencoded"},
        ),
    ]
    for name, body in [
        ("not JSON", b"hello"),
        ("JSON scalar", b"42"),
        ("JSON string", b'"text"'),
        ("JSON null", b"null"),
        ("NaN", b'{"x": NaN}'),
        ("Infinity", b"[Infinity]"),
        ("truncated JSON", BODY[:-1]),
        ("not UTF-8", b'{"x": "\xff\xfe"}'),
        ("UTF-8 BOM", b"\xef\xbb\xbf" + BODY),
        ("empty body", b""),
        ("deep nesting", b"[" * 100 + b"]" * 100),
        ("very deep nesting", b"[" * 200_000 + b"]" * 200_000),
        ("lone surrogate", b'{"x": "\\ud800"}'),
        ("huge integer", b"[" + b"9" * 5000 + b"]"),
        ("number overflowing to infinity", b'{"a":1e400}'),
        ("negative number overflowing", b"[-1E999]"),
    ]:
        cases.append((name, 400, "ci", body, signed(body, "bad-body", timestamp=NOW)))
    gz = gzip.compress(BODY)
    cases.append(
        (
            "gzip encoded",
            400,
            "ci",
            gz,
            {**signed(gz, "gz", timestamp=NOW), "Content-Encoding": "gzip"},
        )
    )
    return [pytest.param(*case[1:], id=case[0]) for case in cases]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, ThreadedListener]]:
    """One service and listener for all refusal cases: refusals change nothing, so every
    case also proves that the ones before it left no trace."""
    root = tmp_path_factory.mktemp("refusals")
    shutil.copytree(REPO / "sample_kb", root / "kb")
    service = Service.open(root / "kb", None, root / "state", clock=FakeClock())
    for title, source, flt in [
        ("main", "ci", {"ref": "refs/heads/main"}),
        ("any", "ci", None),
        ("gh", "github", None),
    ]:
        service.intents.create(
            title=title, instruction="x", kind="event", event_source=source, event_filter=flt
        )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CI_ENV, SECRET)
        mp.setenv(GITHUB_ENV, OTHER_SECRET)
        with ThreadedListener(service, clock=lambda: NOW) as server:
            yield service, server
    service.close()


@pytest.mark.parametrize(("code", "source", "body", "headers"), _refusals())
def test_refusals_store_nothing_and_fire_nothing(
    shared: tuple[Service, ThreadedListener],
    code: int,
    source: str,
    body: bytes,
    headers: dict[str, str],
) -> None:
    service, server = shared
    rows, state, tree = row_counts(service), intent_state(service), tree_snapshot(service.kb.root)
    status, answer = post(server.port, f"/hooks/{source}", body, headers)
    assert status == code, answer
    assert set(answer) == {"error"} and isinstance(answer["error"], str)
    assert "\n" not in answer["error"] and len(answer["error"]) < 200
    assert SECRET not in json.dumps(answer) and OTHER_SECRET not in json.dumps(answer)
    assert row_counts(service) == rows
    assert rows["event"] == 0 and rows["intent_run"] == 0
    assert intent_state(service) == state
    assert all(pending is None for (_, _, pending, _, _) in state.values())
    assert tree_snapshot(service.kb.root) == tree


async def test_chunked_body_over_the_limit_is_refused_while_reading(
    service: Service, listener: Listener
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"x" * 65536  # 1.25 MiB with no Content-Length

    status, answer = await send(listener, chunks(), signed(b"", "chunked", timestamp=NOW))
    assert status == 413, answer
    assert row_counts(service)["event"] == 0


async def test_unset_or_empty_secret_refuses_the_source(
    service: Service, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    for setting in (None, ""):
        if setting is None:
            monkeypatch.delenv(CI_ENV)
        else:
            monkeypatch.setenv(CI_ENV, setting)
        # Even a request "signed" with an empty key is refused.
        status, answer = await send(listener, BODY, signed(BODY, "nokey", secret="", timestamp=NOW))
        assert status == 503, answer
        assert CI_ENV not in answer["error"]
    assert row_counts(service)["event"] == 0


async def test_healthz_and_other_routes_answer_small_json(listener: Listener) -> None:
    assert await send(listener, None, path="/healthz", method="GET") == (200, {"status": "ok"})
    status, answer = await send(listener, None, path="/hooks/ci", method="GET")
    assert status == 405 and set(answer) == {"error"}
    status, answer = await send(listener, b"{}", path="/admin")
    assert status == 404 and set(answer) == {"error"}
    status, answer = await send(listener, b"{}", path="/hooks/")
    assert status == 404 and set(answer) == {"error"}


async def test_unexpected_failure_is_a_generic_500_logged_without_the_secret(
    service: Service,
    listener: Listener,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(*args: object) -> None:
        raise RuntimeError(f"database exploded near {SECRET}")

    monkeypatch.setattr(service.events, "emit", explode)
    caplog.set_level(logging.DEBUG)
    headers = signed(BODY, "boom", timestamp=NOW)
    status, answer = await send(listener, BODY, headers)
    assert (status, answer) == (500, {"error": "internal error"})
    assert "RuntimeError" in caplog.text and "[redacted]" in caplog.text
    assert SECRET not in caplog.text
    # Nothing was stored: the sender's retry of the same delivery is accepted.
    monkeypatch.undo()
    monkeypatch.setenv(CI_ENV, SECRET)
    status, answer = await send(listener, BODY, headers)
    assert status == 202, answer


async def test_port_in_use_is_a_clear_error(service: Service, listener: Listener) -> None:
    with pytest.raises(GoalsuiError, match=r"cannot listen for hooks on 127\.0\.0\.1:\d+"):
        await start_listener(service, "127.0.0.1", listener.port)
    with pytest.raises(GoalsuiError, match="invalid hooks port"):
        await start_listener(service, "127.0.0.1", 70000)


async def test_listener_binds_loopback_by_default(service: Service, secrets_env: None) -> None:
    server = await start_listener(service)
    try:
        assert server.host == "127.0.0.1" and server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


HOSTILE_VALUES = {
    "nul": "a\u0000b",
    "ansi": "\u001b[2J\u001b]0;title\u0007",
    "rtl": "\u202egnp.exe",
    "emoji": "🚀" * 100,
    "big": 2**70,
    "negative": -(2**63),
    "float": 1e308,
    "deep": json.loads("[" * 63 + "]" * 63),
    "long": "x" * 200_000,
    "keys": {"": 1, "\u0000": 2, "a.b": 3, "$where": 4},
}


async def test_hostile_payload_values_are_stored_alike_on_every_engine(
    db_url: str, sample_kb: Any, make_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(sample_kb, db_url)
    intent = service.intents.create(title="any", kind="event", event_source="ci")
    monkeypatch.setenv(CI_ENV, SECRET)
    server = await start_listener(service, clock=lambda: NOW)
    try:
        body = json.dumps(HOSTILE_VALUES).encode()
        status, answer = await send(server, body, signed(body, "hostile", timestamp=NOW))
        assert (status, answer.get("fired")) == (202, [intent.id]), answer
        # intact, except NUL, which PostgreSQL cannot hold: stripped on both engines alike
        stored = service.get(Event, answer["event_id"], "event").payload
        assert stored == strip_nul_deep(HOSTILE_VALUES)
        assert stored["nul"] == "ab" and stored["ansi"] == HOSTILE_VALUES["ansi"]
        # One level deeper than allowed, and an unpaired surrogate: refused, nothing stored.
        for bad in (b"[" * 65 + b"]" * 65, b'{"x": "\\udc00"}'):
            status, answer = await send(server, bad, signed(bad, "refused", timestamp=NOW))
            assert status == 400, answer
        assert len(service.events.list()) == 1
    finally:
        await server.close()
