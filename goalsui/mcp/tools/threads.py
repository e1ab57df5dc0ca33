"""thread_post: a message into the session's own thread, with provenance."""

from __future__ import annotations

from typing import Any

from goalsui.mcp.tools import ToolContext


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool("Post a message into this turn's thread (shown with its provenance).")
    def thread_post(text: str) -> dict[str, Any]:
        message = svc.agents.thread_post(
            scope.thread(None), text, run_id=scope.run_id, provenance=ctx.provenance
        )
        return {"message_id": message.id, "thread_id": message.thread_id}
