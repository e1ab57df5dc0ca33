"""Nightshift tools: the commander reads and fills the night's plan of its own goal."""

from __future__ import annotations

from typing import Any

from goalsui.domain.nightshift import parse_night
from goalsui.domain.timeutil import ensure_utc
from goalsui.mcp.tools import ToolContext


def register(ctx: ToolContext) -> None:
    from goalsui.service import nightshift as ns

    svc, scope = ctx.service, ctx.scope

    def night_of(goal_id: str, night: str | None) -> Any:
        """The night named, else the night the calling run was planned for (a late or
        replayed commander still plans its own night), else tonight."""
        if night:
            return parse_night(night)
        planned = None
        if scope.run_id is not None:
            planned = svc.agents.live_run(scope.run_id).planned_at
        when = ensure_utc(planned) if planned is not None else None
        return ns.current_night(svc, ns.goal_timezone(svc, goal_id), when)

    @ctx.tool(
        "The nightshift plan of a night (default: the calling run's night, in the goal's "
        "timezone) and the task workers that can take items."
    )
    def nightshift_plan(night: str | None = None, goal: str | None = None) -> dict[str, Any]:
        goal_id, _ = ns.nightshift_goal(svc, scope.goal(goal))
        when = night_of(goal_id, night)
        return {
            "night": when.isoformat(),
            "workers": ns.task_workers(svc, goal_id),
            "items": [i.as_json() for i in ns.plan_list(svc, goal_id, when)],
        }

    @ctx.tool(
        "Put one task for one task worker into the night's plan, with the reason (recorded "
        "in decisions). The same worker and task in one night is added once: created false."
    )
    def nightshift_plan_add(
        worker: str, task: str, reason: str, night: str | None = None, goal: str | None = None
    ) -> dict[str, Any]:
        goal_id, _ = ns.nightshift_goal(svc, scope.goal(goal))
        item, created = ns.plan_add(
            svc, goal_id, worker, task, night=night_of(goal_id, night), reason=reason or None
        )
        return {"created": created, "item": item.as_json()}
