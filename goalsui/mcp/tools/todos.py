"""Todo tools on the session's thread; writes may carry the checklist revision they saw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.domain.records import TodoRecord
from goalsui.mcp.tools import ToolContext
from goalsui.store.models import Todo


class TodoInfo(TypedDict):
    id: int
    text: str
    done: bool


class Checklist(TypedDict):
    """A thread's checklist (open items first) and its revision."""

    thread_id: int
    revision: int
    todos: list[TodoInfo]


class TodoChange(TypedDict):
    """The todo after the call; changed false: it already was so (revision unchanged)."""

    thread_id: int
    revision: int
    todo: TodoInfo
    changed: bool


Revision = Annotated[
    int | None,
    Field(
        description="The revision todo_list returned; if the checklist changed since, the "
        "call is refused (reload and retry). Omit to skip the check."
    ),
]
TodoId = Annotated[int, Field(description="The todo's id (todo_list).")]


def _todo(t: Todo | TodoRecord) -> TodoInfo:
    return {"id": t.id or 0, "text": t.text, "done": t.done}


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    def revision(thread_id: int) -> int:
        return svc.threads.get(thread_id).revision

    def changed(tid: int, todo: Todo, before: int | None) -> TodoChange:
        """The item after a call; changed: the checklist's revision moved."""
        after = revision(tid)
        return {
            "thread_id": tid,
            "revision": after,
            "todo": _todo(todo),
            "changed": after != before,
        }

    def mark(
        change: Callable[..., Todo], todo_id: int, expected_revision: int | None
    ) -> TodoChange:
        tid = scope.thread(None)
        before = revision(tid)
        return changed(tid, change(tid, todo_id, expected_revision=expected_revision), before)

    @ctx.tool(
        "List todos",
        "The thread's checklist (open items first) and its revision (pass it back as "
        "expected_revision).",
        read_only=True,
    )
    def todo_list(
        thread_id: Annotated[
            int | None,
            Field(description="Omit in a thread's session; unscoped sessions name the thread."),
        ] = None,
    ) -> Checklist:
        tid = scope.thread(thread_id)
        todos = [_todo(t) for t in svc.todos.list(tid)]
        return {"thread_id": tid, "revision": revision(tid), "todos": todos}

    @ctx.tool(
        "Add a todo",
        "Add an item at the end of this thread's checklist. Add one for every piece of work "
        "you leave unfinished, so the next turn picks it up.",
        read_only=False,
    )
    def todo_add(
        text: Annotated[str, Field(description="The item (2000 characters at most).")],
        expected_revision: Revision = None,
    ) -> TodoChange:
        tid = scope.thread(None)
        return changed(tid, svc.todos.add(tid, text, expected_revision=expected_revision), None)

    @ctx.tool(
        "Complete a todo",
        "Tick an item of this thread's checklist as done. An item already done is left as "
        "it is (changed false, revision unchanged).",
        read_only=False,
        idempotent=True,
    )
    def todo_complete(todo_id: TodoId, expected_revision: Revision = None) -> TodoChange:
        return mark(svc.todos.complete, todo_id, expected_revision)

    @ctx.tool(
        "Reopen a todo",
        "Mark a done item of this thread's checklist open again. An open item is left as "
        "it is (changed false, revision unchanged).",
        read_only=False,
        idempotent=True,
    )
    def todo_reopen(todo_id: TodoId, expected_revision: Revision = None) -> TodoChange:
        return mark(svc.todos.reopen, todo_id, expected_revision)
