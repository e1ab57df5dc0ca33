"""Thread tools on the session's own thread: thread_post (with provenance), thread_read."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.mcp.tools import MAX_PAGE, Cursor, Paged, ToolContext, page

#: the most recent messages thread_read pages through
MAX_HISTORY = 5000


class Posted(TypedDict):
    message_id: int
    thread_id: int


class MessageInfo(TypedDict):
    """One message (created_at ISO 8601 UTC; provenance says who posted it and how)."""

    id: int
    role: str
    content: str
    provenance: str | None
    created_at: str


class ThreadMessages(Paged):
    """The thread's messages, newest first, paged."""

    thread_id: int
    title: str
    messages: list[MessageInfo]


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool(
        "Post to the thread",
        "Post a message into this session's own thread (shown with its provenance: the run "
        "that posted it).",
        read_only=False,
    )
    def thread_post(
        text: Annotated[
            str, Field(description="The message (Markdown, 65536 characters at most).")
        ],
    ) -> Posted:
        who = f"run {scope.run_id}" if scope.run_id is not None else "an agent session"
        said = f"Posted by {who} through goalsui's tools"
        message = svc.agents.thread_post(
            scope.thread(None), text, run_id=scope.run_id, provenance=said
        )
        return {"message_id": message.id or 0, "thread_id": message.thread_id or 0}

    @ctx.tool(
        "Read the thread",
        "This session's own thread: its messages, newest first, paged (pass next_cursor back "
        "as cursor for older ones while truncated is true).",
        read_only=True,
    )
    def thread_read(
        cursor: Cursor = None,
        limit: Annotated[int, Field(description=f"Messages per page, 1 to {MAX_PAGE}.")] = 20,
    ) -> ThreadMessages:
        tid = scope.thread(None)
        thread = svc.threads.get(tid)
        rows = sorted(
            svc.threads.messages(tid, limit=MAX_HISTORY), key=lambda m: m.id or 0, reverse=True
        )
        chunk, paging = page(rows, cursor, limit)
        messages = [
            MessageInfo(
                id=m.id or 0,
                role=m.role,
                content=m.content,
                provenance=m.provenance,
                created_at=m.created_at.isoformat(timespec="seconds"),  # the store's: UTC
            )
            for m in chunk
        ]
        return {"thread_id": tid, "title": thread.title, "messages": messages, **paging}
