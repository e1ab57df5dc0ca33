"""Contract: an event delivery is stored once per (source, delivery id) and fires its
intents once, also when the same delivery reaches several receivers (own connections) at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import func, select

from goalsui.domain.views import EmitResult
from goalsui.service import Service
from goalsui.store.models import Event, Intent


def _event_intent(service: Service) -> Intent:
    return service.intents.create(
        title="on push", kind="event", event_source="github", event_filter={"ref": "main"}
    )


def _events(service: Service, delivery: str) -> int:
    with service.store.read() as s:
        return s.exec(select(func.count()).where(Event.delivery_id == delivery)).one()


def test_replayed_delivery_is_refused(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    intent = _event_intent(service)
    first = service.events.emit("github", {"ref": "main"}, "d-1")
    assert (first.fired, first.duplicate) == ([intent.id], False)
    replay = service.events.emit("github", {"ref": "main"}, "d-1")
    assert replay == EmitResult(first.event_id, [], duplicate=True)
    other_source = service.events.emit("gitlab", {"ref": "main"}, "d-1")
    assert other_source.duplicate is False and other_source.fired == []
    assert _events(service, "d-1") == 2


@pytest.mark.parametrize("shared", [True, False], ids=["one-service", "service-per-thread"])
def test_concurrent_delivery(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service], shared: bool
) -> None:
    """Eight receivers get the same delivery at once: through one service (its pool),
    or through one service each (own engine and connections, like separate processes)."""
    service = make_service(empty_kb, db_url)
    intent = _event_intent(service)
    receivers = [service if shared else make_service(empty_kb, db_url) for _ in range(8)]
    barrier = threading.Barrier(8)
    results: list[EmitResult] = []
    errors: list[BaseException] = []

    def emit(receiver: Service) -> None:
        try:
            barrier.wait(timeout=30)
            results.append(receiver.events.emit("github", {"ref": "main"}, "same-delivery"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=emit, args=(r,)) for r in receivers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    fresh = [r for r in results if not r.duplicate]
    assert len(results) == 8 and len(fresh) == 1
    assert fresh[0].fired == [intent.id]
    assert {r.event_id for r in results} == {fresh[0].event_id}
    assert _events(service, "same-delivery") == 1
    assert service.intents.get(intent.id).pending_trigger == "event"
