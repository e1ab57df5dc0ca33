"""The lists the console's Events, Threads and Event-log screens read are frozen domain
values, not table rows."""

from __future__ import annotations

import dataclasses

import pytest

from goalsui.domain.records import EventRecord, JournalRecord, MessageRecord, ThreadRecord
from goalsui.service import Service


def test_events_threads_and_journal_lists_are_records(service: Service) -> None:
    thread = service.threads.create("Errands", private=True)
    service.threads.post("buy milk", thread_id=thread.id, provenance="a test")
    service.events.emit("gh", {"pr": 7}, "d-1")

    (event,) = service.events.list()
    assert event == EventRecord(event.id, "gh", "d-1", event.received_at, {"pr": 7}, [])
    errands = service.threads.list()[-1]
    assert errands == ThreadRecord(thread.id, "Errands", thread.created_at, private=True)
    (message,) = service.threads.messages(thread.id)
    assert isinstance(message, MessageRecord)
    assert (message.content, message.provenance) == ("buy milk", "a test")
    entry = service.journal.recent(1)[0]
    assert isinstance(entry, JournalRecord)
    assert (entry.action, entry.subject, entry.detail) == (
        "event received",
        "gh/d-1",
        "fired nothing",
    )
    for value in (event, errands, message, entry):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.id = 0  # type: ignore[misc]  # a record is frozen
