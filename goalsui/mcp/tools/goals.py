"""Goal tools: list_goals, get_goal, setup_goal, run_worker_now."""

from __future__ import annotations

from typing import Any

from goalsui.kb.layout import WorkerSeed
from goalsui.mcp.tools import ToolContext, ToolFailure

SEED_FIELDS = ("name", "schedule", "prompt", "timeout", "description")


def _seed(raw: Any) -> WorkerSeed:
    """A worker for setup_goal: name, schedule, prompt (an agent never picks a runner)."""
    if not isinstance(raw, dict):
        raise ToolFailure("each worker must be an object with name, schedule and prompt")
    extra = sorted(set(raw) - set(SEED_FIELDS))
    if extra:
        raise ToolFailure(f"unknown worker field {extra[0]!r} (allowed: {', '.join(SEED_FIELDS)})")
    name = raw.get("name")
    prompt = raw.get("prompt", "")
    if not isinstance(name, str) or not isinstance(prompt, str):
        raise ToolFailure("a worker's name and prompt must be text")
    definition = {k: raw[k] for k in ("schedule", "timeout", "description") if k in raw}
    return WorkerSeed(name, definition, prompt=prompt)


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool("List the goals in the knowledge base (id, name, status, task).")
    def list_goals() -> dict[str, Any]:
        goals = [
            {"goal_id": g.goal_id, "name": g.name, "status": g.status, "task": g.task}
            for g in svc.list_goals()
        ]
        return {"goals": goals}

    @ctx.tool("One goal with its workers and their next runs.")
    def get_goal(goal_id: str) -> dict[str, Any]:
        return svc.get_goal(goal_id).as_json()

    @ctx.tool(
        "Create a goal tree with optional workers [{name, schedule: {cron, timezone} | "
        "{every} | {at}, prompt}]; all or nothing."
    )
    def setup_goal(
        name: str, task: str, workers: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        seeds = [_seed(w) for w in workers or []]
        return svc.setup_goal(name, task, seeds, owner="agent").as_json()

    @ctx.tool("Make one of the goal's workers due now (the scheduler fires it at once).")
    def run_worker_now(worker: str, goal: str | None = None) -> dict[str, Any]:
        intent = svc.run_worker_now(scope.goal(goal), worker)
        return {"intent_id": intent.id, "status": intent.status}
