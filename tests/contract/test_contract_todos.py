"""Contract: every checklist change bumps the thread's revision once; a change made
against a stale revision is refused, also when several writers race with the same one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from goalsui.errors import Conflict
from goalsui.service import Service


def test_each_change_bumps_the_revision(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    thread = service.threads.create("checklist")
    assert service.threads.get(thread.id).revision == 0
    a = service.todos.add(thread.id, "first")
    b = service.todos.add(thread.id, "second", expected_revision=1)
    service.todos.complete(thread.id, a.id, expected_revision=2)
    assert service.threads.get(thread.id).revision == 3
    with pytest.raises(Conflict, match="revision 3, you had 2"):
        service.todos.reopen(thread.id, a.id, expected_revision=2)
    service.todos.reopen(thread.id, a.id)
    assert service.threads.get(thread.id).revision == 4
    assert [(t.text, t.done) for t in service.todos.list(thread.id)] == [
        ("first", False),
        ("second", False),
    ]
    assert b.position > a.position


def test_racing_writers_with_the_same_revision_one_wins(
    db_url: str, empty_kb: Path, make_service: Callable[..., Service]
) -> None:
    service = make_service(empty_kb, db_url)
    writers = [make_service(empty_kb, db_url) for _ in range(6)]
    thread = service.threads.create("contended")
    todos = [service.todos.add(thread.id, f"item {i}") for i in range(6)]
    revision = service.threads.get(thread.id).revision
    barrier = threading.Barrier(len(writers))
    outcomes: list[str] = []

    def complete(writer: Service, todo_id: int) -> None:
        barrier.wait(timeout=30)
        try:
            writer.todos.complete(thread.id, todo_id, expected_revision=revision)
            outcomes.append("ok")
        except Conflict:
            outcomes.append("conflict")

    threads = [
        threading.Thread(target=complete, args=(w, t.id))
        for w, t in zip(writers, todos, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["conflict"] * 5 + ["ok"]
    assert service.threads.get(thread.id).revision == revision + 1
    assert sum(t.done for t in service.todos.list(thread.id)) == 1
