"""Goals: creation (files and schedules, all or nothing), listing, status, deletion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from sqlmodel import col, select

from goalsui.domain.goal_views import by_goal, goal_view
from goalsui.domain.states import ChangeTopic, GoalStatus, IntentStatus
from goalsui.domain.views import GoalView
from goalsui.errors import NotFound
from goalsui.kb.layout import LoadedGoal, WorkerSeed
from goalsui.kb.paths import check_name
from goalsui.service import kbindex
from goalsui.service.context import ServiceContext
from goalsui.service.threads import ensure_home_threads
from goalsui.store.models import Goal, Intent, Thread


def setup_goal(
    ctx: ServiceContext,
    name: str,
    task: str,
    workers: Iterable[WorkerSeed] = (),
    *,
    owner: str = "",
    protocol: str | None = None,
    files: Mapping[str, str] | None = None,
    fail_after_workers: int | None = None,
    fail_before_rename: bool = False,
) -> GoalView:
    """Create a goal tree and register its workers' schedules, all or nothing.

    ``protocol`` is protocol.md's text (default: the template, see
    :mod:`goalsui.kb.authoring`); ``files`` (relative path -> text) are written into the
    tree too; ``fail_*`` inject failures for the tests of the rollback.
    """

    def register(loaded: LoadedGoal) -> Callable[[], None]:
        undo = _register(ctx, loaded, task, owner)
        if fail_before_rename:
            # The rows are committed: a failure here must undo them itself, since
            # create_goal only learns of ``undo`` once register has returned.
            undo()
            raise OSError("injected failure after registering schedules")
        return undo

    loaded = ctx.kb.create_goal(
        name,
        task,
        workers,
        owner=owner,
        protocol=protocol,
        register=register,
        files=files,
        _fail_after_workers=fail_after_workers,
    )
    ctx.journal("goal created", loaded.goal_id, name)
    ctx.changed(ChangeTopic.GOALS)
    return get_goal(ctx, loaded.goal_id)


def _register(ctx: ServiceContext, loaded: LoadedGoal, task: str, owner: str) -> Callable[[], None]:
    """Write the goal row and its workers' intents; returns the function that undoes it."""
    now = ctx.now()
    created: list[int] = []
    with ctx.store.write() as s:
        goal = Goal(
            goal_id=loaded.goal_id,
            name=loaded.definition.name if loaded.definition else loaded.goal_id,
            task=task,
            owner=owner,
            kb_path=str(ctx.kb.root / loaded.goal_id),
            created_at=now,
            updated_at=now,
        )
        s.add(goal)
        intents = [
            kbindex.upsert_worker_intent(s, goal, wdef, None, True, now)
            for wdef in loaded.workers.values()
        ]
        homes, _ = ensure_home_threads(s, goal.goal_id, goal.name, loaded.workers, now)
        s.flush()  # the ids, for undo
        created.extend(intent.id for intent in intents if intent.id is not None)
        threads = [t.id for t in homes if t.id is not None]

    def undo() -> None:
        with ctx.store.write() as s:
            for intent_id in created:
                row = s.get(Intent, intent_id)
                if row is not None:
                    s.delete(row)
            for thread_id in threads:  # new and empty: nothing refers to them yet
                home = s.get(Thread, thread_id)
                if home is not None:
                    s.delete(home)
            goal_row = s.get(Goal, loaded.goal_id)
            if goal_row is not None:
                s.delete(goal_row)

    return undo


def list_goals(ctx: ServiceContext) -> list[GoalView]:
    """Every goal of the index with its workers, in the console's order."""
    with ctx.store.read() as s:
        goals = s.exec(select(Goal).order_by(col(Goal.sort_order), col(Goal.name))).all()
        intents = s.exec(select(Intent).where(col(Intent.goal_id).is_not(None))).all()
    grouped = by_goal(intents)
    return [goal_view(g, grouped.get(g.goal_id, [])) for g in goals]


def goals_and_intents(ctx: ServiceContext) -> tuple[list[GoalView], list[Intent]]:
    """``list_goals()`` and every intent from one read (the console's refresh)."""
    with ctx.store.read() as s:
        goals = s.exec(select(Goal).order_by(col(Goal.sort_order), col(Goal.name))).all()
        intents = list(s.exec(select(Intent).order_by(col(Intent.id))).all())
    grouped = by_goal(intents)
    return [goal_view(g, grouped.get(g.goal_id, [])) for g in goals], intents


def get_goal(ctx: ServiceContext, goal_id: str) -> GoalView:
    """One goal with its workers, or :class:`NotFound`."""
    check_name(goal_id, "goal id")
    with ctx.store.read() as s:
        goal = s.get(Goal, goal_id)
        if goal is None:
            raise NotFound(f"no goal '{goal_id}'")
        intents = s.exec(select(Intent).where(Intent.goal_id == goal_id)).all()
    return goal_view(goal, list(intents))


def delete_goal(ctx: ServiceContext, goal_id: str) -> None:
    """Delete a goal's tree; its intents end."""
    ctx.kb.delete_goal(goal_id)
    with ctx.store.write() as s:
        kbindex.forget_goal(s, goal_id, ctx.now())
    ctx.journal("goal deleted", goal_id)
    ctx.changed(ChangeTopic.GOALS)


def set_goal_status(ctx: ServiceContext, goal_id: str, status: GoalStatus) -> GoalView:
    """Write a goal's status to its definition; its worker intents follow."""
    ctx.kb.set_goal_field(goal_id, status=str(status))
    now = ctx.now()
    active = status == GoalStatus.ACTIVE
    with ctx.store.write() as s:
        for intent in s.exec(select(Intent).where(Intent.goal_id == goal_id)).all():
            kbindex.align_goal_status(intent, active, now)
            if intent.status == IntentStatus.PAUSED and intent.last_error == "goal paused":
                intent.last_error = f"goal {status}"
            s.add(intent)
    kbindex.sync_kb(ctx, [goal_id])
    ctx.changed(ChangeTopic.INTENTS)
    ctx.journal(f"goal {status}", goal_id)
    return get_goal(ctx, goal_id)
