"""Todo tools on the session's thread; writes may carry the checklist revision they saw."""

from __future__ import annotations

from typing import Any

from goalsui.domain.models import Todo
from goalsui.mcp.tools import ToolContext


def _todo(t: Todo) -> dict[str, Any]:
    return {"id": t.id, "text": t.text, "done": t.done}


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    def state(thread_id: int, **extra: Any) -> dict[str, Any]:
        return {"thread_id": thread_id, "revision": svc.get_thread(thread_id).revision, **extra}

    @ctx.tool("The thread's checklist and its revision (pass it back as expected_revision).")
    def todo_list(thread_id: int | None = None) -> dict[str, Any]:
        tid = scope.thread(thread_id)
        return state(tid, todos=[_todo(t) for t in svc.list_todos(tid)])

    @ctx.tool("Add a todo; a stale expected_revision is refused.")
    def todo_add(text: str, expected_revision: int | None = None) -> dict[str, Any]:
        tid = scope.thread(None)
        todo = svc.add_todo(tid, text, expected_revision=expected_revision)
        return state(tid, todo=_todo(todo))

    @ctx.tool("Tick a todo as done; a stale expected_revision is refused.")
    def todo_complete(todo_id: int, expected_revision: int | None = None) -> dict[str, Any]:
        tid = scope.thread(None)
        todo = svc.complete_todo(tid, todo_id, expected_revision=expected_revision)
        return state(tid, todo=_todo(todo))

    @ctx.tool("Reopen a done todo; a stale expected_revision is refused.")
    def todo_reopen(todo_id: int, expected_revision: int | None = None) -> dict[str, Any]:
        tid = scope.thread(None)
        todo = svc.reopen_todo(tid, todo_id, expected_revision=expected_revision)
        return state(tid, todo=_todo(todo))
