"""Goal tools: list_goals, get_goal (the session's own goal unless it holds ``goals``),
setup_goal, run_worker_now, delete_goal."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.domain.views import GoalView
from goalsui.kb.layout import WorkerSeed
from goalsui.mcp.tools import Cursor, GoalArg, Paged, ToolContext, ToolFailure, page

SEED_FIELDS = ("name", "schedule", "prompt", "timeout", "description")


class WorkerInfo(TypedDict):
    """One worker: its schedule and its next run (ISO 8601 UTC)."""

    name: str
    schedule: str
    timezone: str
    intent_id: int | None
    next_run_at: str | None


class GoalSummary(TypedDict):
    goal_id: str
    name: str
    status: str
    task: str


class GoalInfo(GoalSummary):
    """A goal with its workers (paths inside it are relative to its directory)."""

    workers: list[WorkerInfo]


class GoalList(Paged):
    """The goals this session may see, paged."""

    goals: list[GoalSummary]
    note: str | None


class RunNow(TypedDict):
    intent_id: int
    status: str


class Deleted(TypedDict):
    goal_id: str
    deleted: bool


GoalId = Annotated[
    str,
    Field(description="The goal's id (its folder name, e.g. 'release-watch'); see list_goals."),
]


def _seed(raw: Any) -> WorkerSeed:
    """A worker for setup_goal: name, schedule, prompt (an agent never picks a runner)."""
    if not isinstance(raw, dict):
        raise ToolFailure("each worker must be an object with name, schedule and prompt")
    if extra := sorted(set(raw) - set(SEED_FIELDS)):
        raise ToolFailure(f"unknown worker field {extra[0]!r} (allowed: {', '.join(SEED_FIELDS)})")
    name = raw.get("name")
    prompt = raw.get("prompt", "")
    if not isinstance(name, str) or not isinstance(prompt, str):
        raise ToolFailure("a worker's name and prompt must be text")
    definition = {k: raw[k] for k in ("schedule", "timeout", "description") if k in raw}
    return WorkerSeed(name, definition, prompt=prompt)


def _summary(view: GoalView) -> GoalSummary:
    """A goal without its host path."""
    return GoalSummary(goal_id=view.goal_id, name=view.name, status=view.status, task=view.task)


def goal_info(view: GoalView) -> GoalInfo:
    workers = [w.as_json() for w in view.workers]
    return {**_summary(view), "workers": workers}  # type: ignore[typeddict-item]  # as_json() returns the TypedDict's keys as a plain dict


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope
    sees_all = "setup_goal" in ctx.served or (
        scope.run_id is None and scope.goal_id is None and scope.thread_id is None
    )

    def visible(goal_id: str) -> str:
        if sees_all:
            return goal_id
        if scope.goal_id is None:
            raise ToolFailure("this session has no goal of its own; other goals need 'goals'")
        if goal_id != scope.goal_id:
            raise ToolFailure(
                f"goal {goal_id!r} is not this session's goal ({scope.goal_id}); "
                "other goals need the capability 'goals'"
            )
        return goal_id

    @ctx.tool(
        "List goals",
        "The goals this session may see (id, name, status, task), paged. Without the "
        "'goals' capability that is only the session's own goal.",
        read_only=True,
    )
    def list_goals(
        cursor: Cursor = None,
        limit: Annotated[int, Field(description="Goals per page, 1 to 1000.")] = 100,
    ) -> GoalList:
        goals = svc.goals.list()
        note = None
        if not sees_all:
            goals = [g for g in goals if g.goal_id == scope.goal_id]
            note = "only this session's goal: other goals need the capability 'goals'"
        chunk, paging = page([_summary(g) for g in goals], cursor, limit)
        return {"goals": chunk, "note": note, **paging}

    @ctx.tool(
        "Get a goal",
        "One goal with its workers, their schedules and next runs (ISO 8601 UTC).",
        read_only=True,
    )
    def get_goal(goal_id: GoalArg = None) -> GoalInfo:
        return goal_info(svc.goals.get(visible(goal_id or scope.goal(None))))

    @ctx.tool(
        "Create a goal",
        "Create a goal tree (definition, protocol.md, state.yaml) with optional workers, all "
        "or nothing. Each worker: {name, schedule, prompt, timeout?, description?}; schedule "
        "is {cron: '<5-field cron>', timezone: '<IANA zone>'} or {every: '<duration like "
        "30m, 2h>'} or {at: '<ISO 8601 instant with offset>'}. A worker's runner is never "
        "chosen by an agent: the KB default runs it.",
        read_only=False,
    )
    def setup_goal(
        name: Annotated[str, Field(description="The goal's name (200 characters at most).")],
        task: Annotated[str, Field(description="What the goal is for, in a sentence or two.")],
        workers: Annotated[
            list[dict[str, Any]] | None,
            Field(description="Workers to create with the goal (see the tool description)."),
        ] = None,
    ) -> GoalInfo:
        seeds = [_seed(w) for w in workers or []]
        return goal_info(svc.goals.create(name, task, seeds, owner="agent"))

    @ctx.tool(
        "Run a worker now",
        "Make one of the goal's workers due now: the scheduler fires it at once (its "
        "schedule goes on afterwards).",
        read_only=False,
        idempotent=True,
    )
    def run_worker_now(
        worker: Annotated[str, Field(description="The worker's name (workers/<name>/).")],
        goal_id: GoalArg = None,
    ) -> RunNow:
        intent = svc.workers.run_now(scope.goal(goal_id), worker)
        return {"intent_id": intent.id or 0, "status": intent.status}

    @ctx.tool(
        "Delete a goal",
        "Delete a goal's whole tree from the KB and end its intents. Irreversible. Pass the "
        "goal's exact id twice: as goal_id and as confirm.",
        read_only=False,
        destructive=True,
        idempotent=False,
    )
    def delete_goal(
        goal_id: GoalId,
        confirm: Annotated[
            str, Field(description="The goal's exact id again, to confirm the deletion.")
        ],
    ) -> Deleted:
        if confirm != goal_id:
            raise ToolFailure(
                f"confirm must repeat the goal's exact id ({goal_id!r}); nothing was deleted"
            )
        svc.goals.get(goal_id)
        svc.goals.delete(goal_id)
        return {"goal_id": goal_id, "deleted": True}
