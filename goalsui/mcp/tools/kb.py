"""KB tools, confined to one goal tree: list, read, write, log append, update_worker."""

from __future__ import annotations

from typing import Any

from goalsui.mcp.tools import ToolContext, ToolFailure


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool("List a folder of the goal tree (path relative to the goal, default '.').")
    def goal_kb_list(path: str = ".", goal: str | None = None) -> dict[str, Any]:
        entries = svc.agents.kb_list(scope.goal(goal), path)
        for entry in entries:
            entry["modified"] = entry["modified"].isoformat(timespec="seconds")
        return {"entries": entries}

    @ctx.tool(
        "Read a text file of the goal tree (path relative to the goal)."
        if scope.readable is None
        else "Read your own instructions: "
        + " or ".join(f"'{'/'.join(parts)}'" for parts in scope.readable)
        + " (path relative to the goal; other files need the read_kb capability)."
    )
    def goal_kb_read(path: str, goal: str | None = None) -> dict[str, Any]:
        goal_id = scope.goal(goal)
        if scope.readable is not None:
            tree = svc.agents.tree(goal_id)
            if tree.parts(tree.resolve(path)) not in scope.readable:
                allowed = ", ".join("/".join(parts) for parts in scope.readable)
                raise ToolFailure(
                    f"{path!r}: this worker reads only {allowed} (read_kb is not granted)"
                )
        return {"path": path, "text": svc.agents.kb_read(goal_id, path)}

    @ctx.tool(
        "Write a text file of the goal tree atomically (path relative to the goal). "
        "YAML must parse; definition.yaml files are refused (use update_worker); log/ is "
        "append-only (use goal_log_append)."
    )
    def goal_kb_write(path: str, text: str, goal: str | None = None) -> dict[str, Any]:
        goal_id = scope.goal(goal)
        written = svc.agents.kb_write(goal_id, path, text, definitions=False)
        return {"path": str(written.relative_to(svc.kb.goal_dir(goal_id).resolve()))}

    @ctx.tool("Append one entry to the goal's log (log/YYYY-MM-DD.md).")
    def goal_log_append(text: str, goal: str | None = None) -> dict[str, Any]:
        path, line = svc.agents.log_append(scope.goal(goal), text)
        return {"path": f"log/{path.name}", "line": line}

    @ctx.tool(
        "Change a worker's schedule ({cron, timezone} | {every} | {at}), timeout or "
        "prompt.md; comments in its definition are kept. The runner cannot be changed here."
    )
    def update_worker(
        worker: str,
        schedule: dict[str, Any] | None = None,
        timeout: str | None = None,
        prompt: str | None = None,
        goal: str | None = None,
    ) -> dict[str, Any]:
        view = svc.update_worker(
            scope.goal(goal), worker, schedule=schedule, timeout=timeout, prompt=prompt
        )
        return view.as_json()
