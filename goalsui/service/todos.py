"""A thread's checklist (``service.todos``): todos under one revision every change bumps."""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, select

from goalsui.domain.checklist import parse_markdown_checklist
from goalsui.domain.records import TodoRecord
from goalsui.domain.states import ChangeTopic
from goalsui.domain.text import one_line
from goalsui.errors import Conflict, NotFound, ValidationError
from goalsui.service.context import Aggregate, found
from goalsui.store.models import Thread, Todo

MAX_TODO = 2000
MAX_ITEMS = 1000


def _text(text: str) -> str:
    """A todo's text, whitespace collapsed; non-empty and within :data:`MAX_TODO`."""
    too_long = f"todo text is too long ({MAX_TODO} characters at most)"
    return one_line(text, MAX_TODO, empty="a todo needs text", too_long=too_long)


def _bump(s: Session, thread_id: int, expected_revision: int | None) -> Thread:
    """Bump the checklist revision; a stale ``expected_revision`` is a :class:`Conflict`."""
    # FOR UPDATE: on PostgreSQL racing writers queue here and re-read the revision
    # (SQLite's BEGIN IMMEDIATE already serialises them; the clause is dropped there).
    thread = found(s.get(Thread, thread_id, with_for_update=True), "thread", thread_id)
    if expected_revision is not None and thread.revision != expected_revision:
        raise Conflict(
            f"thread {thread_id}'s checklist changed (revision {thread.revision}, "
            f"you had {expected_revision}); reload and try again"
        )
    thread.revision += 1
    s.add(thread)
    return thread


class Todos(Aggregate):
    """The checklists of threads."""

    def _append(
        self, thread_id: int, items: list[tuple[str, bool]], expected_revision: int | None
    ) -> list[Todo]:
        """Append items at the end of the checklist: all or none, one revision bump."""
        now = self.ctx.now()
        todos: list[Todo] = []
        with self.ctx.store.write() as s:
            _bump(s, thread_id, expected_revision)
            top = s.exec(select(func.max(Todo.position)).where(Todo.thread_id == thread_id)).one()
            for offset, (text, done) in enumerate(items, start=1):
                todo = Todo(
                    thread_id=thread_id,
                    text=text,
                    done=done,
                    position=(top or 0) + offset,
                    created_at=now,
                    completed_at=now if done else None,
                )
                s.add(todo)
                todos.append(todo)
            s.flush()
        return todos

    def add(
        self, thread_id: int, text: str, *, done: bool = False, expected_revision: int | None = None
    ) -> Todo:
        """Add one item at the end of a thread's checklist."""
        text = _text(text)
        (todo,) = self._append(thread_id, [(text, done)], expected_revision)
        self.ctx.done(ChangeTopic.TODOS, "todo added", f"thread {thread_id}", text)
        return todo

    def _set(self, thread_id: int, todo_id: int, done: bool, expected_revision: int | None) -> Todo:
        """Complete or reopen one item; one already so is left alone (no write, no bump)."""
        with self.ctx.store.write() as s:
            todo = s.get(Todo, todo_id)
            if todo is None or todo.thread_id != thread_id:
                raise NotFound(f"thread {thread_id} has no todo {todo_id}")
            if todo.done == done:  # completing a done one, reopening an open one: no change
                return todo
            _bump(s, thread_id, expected_revision)
            todo.done = done
            todo.completed_at = (todo.completed_at or self.ctx.now()) if done else None
            s.add(todo)
        self.ctx.journal.record(
            "todo completed" if done else "todo reopened", f"thread {thread_id}", todo.text
        )
        self.ctx.changed(ChangeTopic.TODOS)
        return todo

    def import_checklist(
        self, thread_id: int, markdown: str, *, expected_revision: int | None = None
    ) -> list[Todo]:
        """Add every ``- [ ]`` / ``- [x]`` item of a Markdown checklist to a thread."""
        items = [(_text(text), done) for text, done in parse_markdown_checklist(markdown)]
        if not items:
            raise ValidationError("no '- [ ]' or '- [x]' items found in the checklist")
        if len(items) > MAX_ITEMS:
            raise ValidationError(f"too many checklist items ({MAX_ITEMS} at most)")
        todos = self._append(thread_id, items, expected_revision)
        self.ctx.journal.record("checklist imported", f"thread {thread_id}", f"{len(todos)} items")
        self.ctx.changed(ChangeTopic.TODOS)
        return todos

    def complete(
        self, thread_id: int, todo_id: int, *, expected_revision: int | None = None
    ) -> Todo:
        """Tick one item (an item already done is left as it is)."""
        return self._set(thread_id, todo_id, True, expected_revision)

    def reopen(self, thread_id: int, todo_id: int, *, expected_revision: int | None = None) -> Todo:
        """Untick one item (an open item is left as it is)."""
        return self._set(thread_id, todo_id, False, expected_revision)

    def list(self, thread_id: int, *, include_done: bool = True) -> list[TodoRecord]:
        """A thread's checklist: open items first (by position), then done ones."""
        self.ctx.get(Thread, thread_id, "thread")
        with self.ctx.store.read() as s:
            q = select(Todo).where(Todo.thread_id == thread_id)
            if not include_done:
                q = q.where(Todo.done == False)  # noqa: E712
            rows = s.exec(q).all()
        return [t.record() for t in sorted(rows, key=lambda t: (t.done, t.position, t.id or 0))]
