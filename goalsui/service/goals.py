"""Goals (``service.goals``): creation (all or nothing), listing, status, deletion."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlmodel import col, select

from goalsui.domain.names import check_name
from goalsui.domain.states import ChangeTopic, GoalStatus, IntentStatus
from goalsui.domain.views import GoalView, by_goal, goal_view
from goalsui.errors import NotFound, ValidationError
from goalsui.kb.layout import LoadedGoal, WorkerSeed
from goalsui.service import kbindex
from goalsui.service.context import ServiceContext
from goalsui.service.homes import ensure_home_threads
from goalsui.service.kbindex import Index
from goalsui.store.models import Goal, Intent, Thread


class Goals:
    """The goals of the KB: their trees, index rows and worker schedules."""

    def __init__(self, ctx: ServiceContext, index: Index) -> None:
        self.ctx = ctx
        self.index = index

    def create(
        self,
        name: str,
        task: str,
        workers: Iterable[WorkerSeed] = (),
        *,
        owner: str = "",
        protocol: str | None = None,
        files: Mapping[str, str] | None = None,
        _fail_after_workers: int | None = None,
    ) -> GoalView:
        """Create a goal tree and register its workers' schedules, all or nothing
        (``_fail_after_workers`` injects a failure for the tests of the rollback)."""
        loaded = self.ctx.kb.create_goal(
            name,
            task,
            workers,
            owner=owner,
            protocol=protocol,
            register=lambda loaded: self._register(loaded, task, owner),
            files=files,
            _fail_after_workers=_fail_after_workers,
        )
        self.ctx.done(ChangeTopic.GOALS, "goal created", loaded.goal_id, name)
        return self.get(loaded.goal_id)

    def _register(self, loaded: LoadedGoal, task: str, owner: str) -> Callable[[], None]:
        """Write the goal row and its workers' intents; returns the function that undoes it."""
        ctx = self.ctx
        now = ctx.now()
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
        # the home threads are new and empty: nothing refers to them yet
        rows: list[tuple[type[Any], object]] = [(Intent, i.id) for i in intents]
        rows += [(Thread, t.id) for t in homes] + [(Goal, loaded.goal_id)]

        def undo() -> None:
            with ctx.store.write() as s:
                for model, key in rows:
                    row = s.get(model, key)
                    if row is not None:
                        s.delete(row)

        return undo

    def with_intents(self, *where: Any) -> tuple[list[GoalView], list[Intent]]:
        """``list()`` and every intent (or those matching ``where``) from one read (the
        console's refresh)."""
        with self.ctx.store.read() as s:
            goals = s.exec(select(Goal).order_by(col(Goal.sort_order), col(Goal.name))).all()
            intents = list(s.exec(select(Intent).where(*where).order_by(col(Intent.id))).all())
        grouped = by_goal(intents)
        return [goal_view(g.record(), grouped.get(g.goal_id, [])) for g in goals], intents

    def resolve(self, text: str) -> str:
        """The goal id ``text`` stands for, as people type it: an exact id, else one id or
        slug (the id without its 8-hex suffix) prefix match. Several matches are refused;
        none raises NotFound with the closest ids, if any, else returns ``text``."""
        text = text.strip()
        ids = self.ctx.kb.goal_ids()
        if not text or text in ids:
            return text
        found = sorted({g for g in ids if g.startswith(text) or _slug(g) == text})
        if len(found) == 1:
            return found[0]
        if found:
            shown = ", ".join(found[:6]) + (" ..." if len(found) > 6 else "")
            raise ValidationError(f"goal '{text}' is ambiguous: {shown}")
        by_slug = {_slug(g): g for g in ids}
        close = difflib.get_close_matches(text, [*ids, *by_slug], n=3, cutoff=0.6)
        if not close:
            return text
        names = list(dict.fromkeys(by_slug.get(c, c) for c in close))
        raise NotFound(f"no goal '{text}'; did you mean {' or '.join(names)}?")

    def get(self, goal_id: str) -> GoalView:
        """One goal with its workers, or :class:`NotFound`."""
        check_name(goal_id, "goal id")
        with self.ctx.store.read() as s:
            goal = s.get(Goal, goal_id)
            if goal is None:
                raise NotFound(f"no goal '{goal_id}'")
            intents = s.exec(select(Intent).where(Intent.goal_id == goal_id)).all()
        return goal_view(goal.record(), list(intents))

    def delete(self, goal_id: str) -> None:
        """Delete a goal's tree; its intents end."""
        self.ctx.kb.delete_goal(goal_id)
        with self.ctx.store.write() as s:
            kbindex.forget_goal(s, goal_id, self.ctx.now())
        self.ctx.done(ChangeTopic.GOALS, "goal deleted", goal_id)

    def pause(self, goal_id: str) -> GoalView:
        """Pause a goal: its workers' schedules pause with it."""
        return self._set_status(goal_id, GoalStatus.PAUSED)

    def resume(self, goal_id: str) -> GoalView:
        """Resume a goal: the workers it paused resume, planned from now."""
        return self._set_status(goal_id, GoalStatus.ACTIVE)

    def complete(self, goal_id: str) -> GoalView:
        """Mark a goal completed: its workers' schedules pause."""
        return self._set_status(goal_id, GoalStatus.COMPLETED)

    def _set_status(self, goal_id: str, status: GoalStatus) -> GoalView:
        """Write a goal's status to its definition; its worker intents follow."""
        self.ctx.kb.set_goal_field(goal_id, status=str(status))
        now = self.ctx.now()
        active = status == GoalStatus.ACTIVE
        with self.ctx.store.write() as s:
            for intent in s.exec(select(Intent).where(Intent.goal_id == goal_id)).all():
                kbindex.align_goal_status(intent, active, now)
                if intent.status == IntentStatus.PAUSED and intent.last_error == "goal paused":
                    intent.last_error = f"goal {status}"
                s.add(intent)
        self.index.sync([goal_id])
        self.ctx.changed(ChangeTopic.INTENTS)
        self.ctx.journal.record(f"goal {status}", goal_id)
        return self.get(goal_id)

    def list(self) -> list[GoalView]:
        """Every goal of the index with its workers, in the console's order (the goals'
        own intents only: every turn's prompt lists the goals)."""
        return self.with_intents(col(Intent.goal_id).is_not(None))[0]


def _slug(goal_id: str) -> str:
    head, _, tail = goal_id.rpartition("-")
    return head if head and len(tail) == 8 else goal_id
