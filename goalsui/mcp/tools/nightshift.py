"""Nightshift tools: the commander reads and fills the night's plan of its own goal."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.domain.nightshift import parse_night
from goalsui.domain.timeutil import ensure_utc
from goalsui.mcp.tools import GoalArg, ToolContext


class PlanItem(TypedDict):
    """One task of a night's plan, for one task worker."""

    night: str
    worker: str
    task: str
    status: str
    branch: NotRequired[str]
    commits: NotRequired[int]
    check: NotRequired[str]
    run_id: NotRequired[int]
    summary: NotRequired[str]
    reason: NotRequired[str]
    stray: NotRequired[str]


class NightPlan(TypedDict):
    """A night (YYYY-MM-DD, the evening it starts), its task workers and its plan."""

    night: str
    workers: list[str]
    items: list[PlanItem]


class PlanAdded(TypedDict):
    """created false: the same worker and task were already planned that night."""

    created: bool
    item: PlanItem


Night = Annotated[
    str | None,
    Field(
        description="The night as YYYY-MM-DD (the evening it starts, in the goal's timezone); "
        "omit for the calling run's night (else tonight)."
    ),
]


def register(ctx: ToolContext) -> None:

    svc, scope = ctx.service, ctx.scope

    def night_of(goal_id: str, night: str | None) -> Any:
        """The night named, else the calling run's planned night, else tonight."""
        if night:
            return parse_night(night)
        planned = svc.agents.live_run(scope.run_id).planned_at if scope.run_id is not None else None
        when = ensure_utc(planned) if planned is not None else None
        return svc.nightshift.current_night(svc.nightshift.timezone(goal_id), when)

    @ctx.tool(
        "Read the night's plan",
        "The nightshift plan of a night (default: the calling run's night, in the goal's "
        "timezone) and the task workers that can take items.",
        read_only=True,
    )
    def nightshift_plan(night: Night = None, goal_id: GoalArg = None) -> NightPlan:
        gid, _ = svc.nightshift.goal(scope.goal(goal_id))
        when = night_of(gid, night)
        return {
            "night": when.isoformat(),
            "workers": svc.nightshift.task_workers(gid),
            "items": [i.as_json() for i in svc.nightshift.plan(gid, when)],  # type: ignore[misc]  # as_json() returns the TypedDict's keys as a plain dict
        }

    @ctx.tool(
        "Plan a task for the night",
        "Put one task for one task worker into the night's plan, with the reason (recorded "
        "in decisions). The same worker and task in one night is added once (created false).",
        read_only=False,
        idempotent=True,
    )
    def nightshift_plan_add(
        worker: Annotated[str, Field(description="A task worker's name (see nightshift_plan).")],
        task: Annotated[str, Field(description="The task, one line.")],
        reason: Annotated[str, Field(description="Why this task tonight (kept in decisions).")],
        night: Night = None,
        goal_id: GoalArg = None,
    ) -> PlanAdded:
        gid, _ = svc.nightshift.goal(scope.goal(goal_id))
        item, created = svc.nightshift.plan_add(
            gid, worker, task, night=night_of(gid, night), reason=reason or None
        )
        return {"created": created, "item": item.as_json()}  # type: ignore[typeddict-item]  # as_json() returns a plain dict with the TypedDict's keys
