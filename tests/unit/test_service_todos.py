"""Threads and their revisioned checklists through the service."""

from __future__ import annotations

import pytest

from goalsui.errors import Conflict, NotFound, ValidationError
from goalsui.service import Service


@pytest.fixture
def thread_id(service: Service) -> int:
    return service.threads.create("Visa application").id


def revision(service: Service, thread_id: int) -> int:
    return service.threads.get(thread_id).revision


def test_threads(service: Service) -> None:
    a = service.threads.create("  Visa   application ")
    b = service.threads.create("Taxes", private=True)
    assert a.title == "Visa application" and not a.private and a.revision == 0
    assert b.private
    assert [t.id for t in service.threads.list() if t.goal_id is None] == [a.id, b.id]
    assert service.threads.get(b.id).title == "Taxes"
    assert service.threads.find("Taxes").id == b.id
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(ValidationError):
            service.threads.create(bad)
    with pytest.raises(NotFound):
        service.threads.get(999)


def test_add_complete_reopen_and_order(service: Service, thread_id: int) -> None:
    a = service.todos.add(thread_id, "book appointment")
    b = service.todos.add(thread_id, "passport photos")
    c = service.todos.add(thread_id, "employment letter")
    assert [t.position for t in (a, b, c)] == [1, 2, 3]
    assert revision(service, thread_id) == 3
    done = service.todos.complete(thread_id, a.id)
    assert done.done and done.completed_at == service.now()
    # open items first (by position), then done ones
    assert [t.text for t in service.todos.list(thread_id)] == [
        "passport photos",
        "employment letter",
        "book appointment",
    ]
    assert [t.id for t in service.todos.list(thread_id, include_done=False)] == [b.id, c.id]
    assert revision(service, thread_id) == 4
    reopened = service.todos.reopen(thread_id, a.id)
    assert not reopened.done and reopened.completed_at is None
    assert [t.id for t in service.todos.list(thread_id)] == [a.id, b.id, c.id]
    assert revision(service, thread_id) == 5


def test_expected_revision_conflict_changes_nothing(service: Service, thread_id: int) -> None:
    a = service.todos.add(thread_id, "one")
    seen = revision(service, thread_id)
    service.todos.add(thread_id, "two", expected_revision=seen)  # matches: accepted
    with pytest.raises(Conflict, match="revision"):
        service.todos.complete(thread_id, a.id, expected_revision=seen)  # stale
    with pytest.raises(Conflict):
        service.todos.add(thread_id, "three", expected_revision=seen)
    with pytest.raises(Conflict):
        service.todos.import_checklist(thread_id, "- [ ] four", expected_revision=seen)
    assert [t.text for t in service.todos.list(thread_id)] == ["one", "two"]
    assert not service.todos.list(thread_id)[0].done
    assert revision(service, thread_id) == seen + 1


def test_markdown_checklist_import(service: Service, thread_id: int) -> None:
    service.todos.add(thread_id, "already there")
    before = revision(service, thread_id)
    markdown = """# Visa

- [x] Book the appointment
- [ ] Get   passport photos
* [X] Employment letter
+ [ ] Bank statements
- not a checkbox
- [ ]
1. [ ] numbered lists are not checklists
    - [ ] Nested item
"""
    todos = service.todos.import_checklist(thread_id, markdown)
    assert [(t.text, t.done) for t in todos] == [
        ("Book the appointment", True),
        ("Get passport photos", False),
        ("Employment letter", True),
        ("Bank statements", False),
        ("Nested item", False),
    ]
    assert [t.position for t in todos] == [2, 3, 4, 5, 6]
    assert revision(service, thread_id) == before + 1  # one change, one bump
    listed = service.todos.list(thread_id)
    assert [t.text for t in listed if not t.done] == [
        "already there",
        "Get passport photos",
        "Bank statements",
        "Nested item",
    ]


def test_bad_todo_input_changes_nothing(service: Service, thread_id: int) -> None:
    a = service.todos.add(thread_id, "one")
    other = service.threads.create("Other").id
    rev = revision(service, thread_id)
    with pytest.raises(ValidationError):
        service.todos.add(thread_id, "   ")
    with pytest.raises(ValidationError):
        service.todos.add(thread_id, "x" * 2001)
    with pytest.raises(ValidationError):
        service.todos.import_checklist(thread_id, "no boxes here\n- plain item\n")
    with pytest.raises(NotFound):
        service.todos.add(999, "ghost")
    with pytest.raises(NotFound):
        service.todos.complete(thread_id, 999)
    with pytest.raises(NotFound):
        service.todos.complete(other, a.id)  # a todo of another thread
    with pytest.raises(NotFound):
        service.todos.list(999)
    assert [t.text for t in service.todos.list(thread_id)] == ["one"]
    assert revision(service, thread_id) == rev


def test_completing_twice_keeps_the_first_completion_time(
    service: Service, thread_id: int, clock
) -> None:
    a = service.todos.add(thread_id, "one")
    first = service.todos.complete(thread_id, a.id).completed_at
    clock.advance(3600)
    assert service.todos.complete(thread_id, a.id).completed_at == first
