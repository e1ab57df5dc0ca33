"""The nightshift (``service.nightshift``): bind a goal to a repository, plan the night,
list its branches, approve (merge) or reject (delete) them; every decision journaled."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from goalsui.domain import nightshift as rules
from goalsui.domain.names import check_name
from goalsui.domain.timeutil import load_zone
from goalsui.domain.untrusted import plain
from goalsui.domain.views import GoalView, json_fields
from goalsui.errors import GoalsuiError, NotFound, ValidationError
from goalsui.kb import nightshift as files
from goalsui.kb.nightshift import Binding
from goalsui.kb.repo import GitError, Repo
from goalsui.service.bindings import journal_details, record_binding, recorded_binding
from goalsui.service.context import ServiceContext
from goalsui.service.goals import Goals
from goalsui.service.nightshift_templates import COMMANDER, ROLES, render_goal_files, worker_seeds

#: the journal action that records a branch goalsui made, with the commit it left
BRANCH_RECORD = "nightshift branch"


@dataclass(frozen=True)
class BranchView:
    """One branch the nightshift produced: ``reviewed`` is the commit recorded when the
    task ended (None for a branch goalsui did not make), ``tip`` where it points now."""

    branch: str
    commits: int
    diffstat: str
    item: rules.PlanItem | None
    reviewed: str | None = None
    tip: str | None = None

    @property
    def made_by_goalsui(self) -> bool:
        return self.reviewed is not None

    @property
    def moved(self) -> bool:
        """The branch points elsewhere than the commit goalsui recorded."""
        return self.reviewed is not None and self.tip != self.reviewed

    def as_json(self) -> dict[str, Any]:
        item = self.item.as_json() if self.item else None
        return {**vars(self), "item": item, **json_fields(self, "made_by_goalsui moved")}


class Nightshift:
    """The nightshift goals of one service: binding, plan, branches and decisions."""

    def __init__(self, ctx: ServiceContext, goals: Goals) -> None:
        self.ctx = ctx
        self.goals = goals

    def record_branch(
        self, goal_id: str, branch: str, sha: str, *, run_id: int | None = None
    ) -> None:
        """Record in the database (out of every agent's reach) that goalsui made ``branch``
        and left it at ``sha``: approvals merge exactly that commit, and only such branches."""
        self.ctx.journal.record(BRANCH_RECORD, goal_id, f"{branch} {sha}", run_id=run_id, tool=None)

    def branch_records(self, goal_id: str) -> dict[str, str]:
        """branch -> the commit goalsui last recorded for it, for the goal."""
        records: dict[str, str] = {}
        for detail in journal_details(self.ctx, BRANCH_RECORD, goal_id):
            branch, _, sha = str(detail).partition(" ")
            if branch and sha:
                records[branch] = sha.strip()
        return records

    def copy_branch_records(self, goal_id: str, to: Nightshift) -> None:
        """Copy ``goal_id``'s branch records into ``to``, so a replay's branches can be approved."""
        known = to.branch_records(goal_id)
        for branch, sha in self.branch_records(goal_id).items():
            if known.get(branch) != sha:
                to.record_branch(goal_id, branch, sha)

    def copy_records(self, goal_id: str, to: Nightshift) -> None:
        """Give ``to`` (a replay's database) the goal's binding and branch records."""
        binding = recorded_binding(self.ctx, goal_id)
        if binding is not None:
            record_binding(to.ctx, goal_id, binding)
        self.copy_branch_records(goal_id, to)

    def report_path(self, goal_id: str, night: date) -> Path:
        """Where the morning report of ``night`` is written."""
        return self.ctx.kb.goal_dir(goal_id) / "reports" / rules.report_file(night)

    def init(
        self,
        repo_path: Path,
        *,
        base: str | None = None,
        tz: str = "UTC",
        runner: dict[str, Any] | None = None,
        workers: int = 3,
        name: str | None = None,
        check: list[str] | None = None,
    ) -> GoalView:
        """Create a nightshift goal bound to the git work tree at ``repo_path`` (atomically)."""
        load_zone(tz)
        repo = Repo(repo_path.expanduser().resolve())
        if not repo.is_work_tree():
            raise ValidationError(f"{repo_path} is not the top of a git work tree")
        base = base or repo.current_branch()
        if not base or not repo.branch_exists(base):
            raise ValidationError(f"the base branch {base!r} does not exist in {repo.path}")
        binding = Binding(repo.path, base, tuple(check) if check else None)
        title = name or f"Nightshift {repo.path.name}"
        seeds = worker_seeds(rules.worker_slots(workers), tz, runner)
        view = self.goals.create(
            title,
            f"Work the backlog of {repo.path} overnight: one atomic task per slot, each on its "
            f"own branch from {base}, approved or rejected in the morning.",
            seeds,
            files=render_goal_files(binding, tz, [s.name for s in seeds]),
        )
        self.ctx.journal.record("nightshift init", view.goal_id, f"repo {repo.path} base {base}")
        record_binding(self.ctx, view.goal_id, binding)
        return view

    def binding_of(self, goal_id: str) -> Binding | None:
        """The operator's recorded binding (a later ``nightshift.yaml`` edit is not
        obeyed), else the file's; None for no nightshift."""
        try:
            on_file = files.load_binding(self.ctx.kb.goal_dir(goal_id))
        except GoalsuiError:
            recorded = recorded_binding(self.ctx, goal_id)
            if recorded is None:
                raise
            return recorded
        if on_file is None:
            return None
        return recorded_binding(self.ctx, goal_id) or on_file

    def trust(self, goal_id: str) -> Binding:
        """The operator accepts the goal's ``nightshift.yaml`` as it is now (checked first)."""
        binding = files.load_binding(self.ctx.kb.goal_dir(goal_id))
        if binding is None:
            raise ValidationError(f"goal {goal_id} is not a nightshift (no nightshift.yaml)")
        files.checked_repo(binding)
        record_binding(self.ctx, goal_id, binding)
        return binding

    def goal(self, goal_id: str | None = None) -> tuple[str, Binding]:
        """The named nightshift goal, or the KB's only one; with its binding."""
        if goal_id:
            binding = self.binding_of(goal_id)
            if binding is None:
                raise ValidationError(f"goal {goal_id} is not a nightshift (no nightshift.yaml)")
            return goal_id, binding
        found = [(g, b) for g in self.ctx.kb.goal_ids() if (b := self.binding_of(g)) is not None]
        if not found:
            raise NotFound(
                "no nightshift goal in this KB; create one with 'goalsui nightshift init'"
            )
        if len(found) > 1:
            names = ", ".join(g for g, _ in found)
            raise ValidationError(f"several nightshift goals ({names}); name one with --goal")
        return found[0]

    def current_night(self, binding_tz: str, now: datetime | None = None) -> date:
        """The night ``now`` (default: the service's clock) belongs to, in the goal's zone."""
        return rules.night_of(now or self.ctx.now(), load_zone(binding_tz))

    def timezone(self, goal_id: str) -> str:
        """The timezone of the goal's commander (the schedules' zone), else UTC."""
        loaded = self.ctx.kb.load_goal(goal_id)
        worker = loaded.workers.get(COMMANDER)
        return str(worker.schedule.timezone) if worker and worker.schedule else "UTC"

    def task_workers(self, goal_id: str) -> list[str]:
        """The workers that take tasks (every worker but the commander and the reporter)."""
        return sorted(w for w in self.ctx.kb.load_goal(goal_id).workers if w not in ROLES)

    def plan_add(
        self,
        goal_id: str,
        worker: str,
        task: str,
        *,
        night: date | None = None,
        reason: str | None = None,
    ) -> tuple[rules.PlanItem, bool]:
        """Add a task to the night's plan once per (night, worker, task); returns (item, new)."""
        check_name(worker, "worker name")
        if worker not in (workers := self.task_workers(goal_id)):
            choices = ", ".join(workers) or "none"
            raise ValidationError(
                f"{worker!r} is not a task worker of {goal_id} (workers: {choices})"
            )
        task = rules.check_task(task)
        night = night or self.current_night(self.timezone(goal_id))
        item = rules.PlanItem(night=night, worker=worker, task=task, reason=reason)
        created: list[bool] = []

        def change(items: list[rules.PlanItem], raw: list[object]) -> list[object] | None:
            if any(i.key == item.key for i in items):
                return None
            created.append(True)
            return [*raw, item.as_yaml()]

        files.update_plan(self.ctx.kb.goal_dir(goal_id), change)
        if created:
            if reason:
                files.append_decision(
                    self.ctx.kb.goal_dir(goal_id),
                    f"{night}: {worker} takes '{task}' because {reason}",
                )
            self.ctx.done("goals", "nightshift plan add", goal_id, f"{night} {worker}: {task}")
        return item, bool(created)

    def plan(self, goal_id: str, night: date | None = None) -> list[rules.PlanItem]:
        items = files.read_plan(self.ctx.kb.goal_dir(goal_id))
        return [i for i in items if night is None or i.night == night]

    def set_item(self, goal_id: str, updated: rules.PlanItem) -> None:
        """Replace the plan item with the same (night, worker, task)."""

        def change(items: list[rules.PlanItem], raw: list[object]) -> list[object] | None:
            out: list[object] = []
            for entry in raw:
                parsed = rules.item_from_yaml(entry)
                out.append(updated.as_yaml() if parsed and parsed.key == updated.key else entry)
            return out

        files.update_plan(self.ctx.kb.goal_dir(goal_id), change)

    def _item_for_branch(self, goal_id: str, branch: str) -> rules.PlanItem | None:
        return next((i for i in self.plan(goal_id) if i.branch == branch), None)

    def branches(self, goal_id: str) -> list[BranchView]:
        """Every ``nightshift/`` branch of the bound repository, newest night first."""
        _, binding = self.goal(goal_id)
        repo = files.checked_repo(binding)
        records = self.branch_records(goal_id)
        views = []
        for branch in repo.branches(rules.BRANCH_PREFIX):
            shown = records.get(branch) or branch
            if not repo.has_commit(shown):
                shown = branch
            commits = repo.commits(binding.base, shown)
            views.append(
                BranchView(
                    branch=branch,
                    commits=len(commits),
                    diffstat=repo.diffstat(binding.base, shown),
                    item=self._item_for_branch(goal_id, branch),
                    reviewed=records.get(branch),
                    tip=repo.head_of(branch),
                )
            )
        views.sort(key=lambda v: (v.branch.split("/")[1], v.branch))
        views.sort(key=lambda v: v.branch.split("/")[1], reverse=True)  # newest night first
        return views

    def diff(self, goal_id: str, branch: str) -> str:
        """The diff an approval would merge: from the base to the commit goalsui recorded."""
        binding, repo = self._branch(goal_id, branch)
        reviewed = self.branch_records(goal_id).get(branch)
        return repo.diff(
            binding.base, reviewed if reviewed and repo.has_commit(reviewed) else branch
        )

    def _branch(self, goal_id: str, branch: str) -> tuple[Binding, Repo]:
        """The goal's binding, and its repository, which has the nightshift ``branch``."""
        _, binding = self.goal(goal_id)
        if not branch.startswith(rules.BRANCH_PREFIX) or ".." in branch:
            raise ValidationError(f"{plain(branch, limit=80)!r} is not a nightshift branch")
        repo = files.checked_repo(binding)
        if not repo.branch_exists(branch):
            raise NotFound(f"no branch {plain(branch, limit=80)} in {binding.repo}")
        return binding, repo

    def _made_by_goalsui(self, goal_id: str, branch: str, verb: str) -> str:
        """The commit goalsui recorded for ``branch``; refuses a branch it did not make."""
        reviewed = self.branch_records(goal_id).get(branch)
        if reviewed is None:
            self.ctx.journal.record(
                f"nightshift {verb} refused", goal_id, f"{branch}: not made by goalsui"
            )
            raise ValidationError(
                f"goalsui did not make {plain(branch, limit=80)} (no record of it in the "
                f"database); nothing was {'merged' if verb == 'approve' else 'deleted'}"
            )
        return reviewed

    def approve(self, goal_id: str, branch: str, *, sha: str | None = None) -> str:
        """Merge exactly the reviewed commit of the branch (or ``sha``) into the base,
        then delete the branch.

        Refused for a branch goalsui did not make or one that moved since: nothing added
        after the review is merged unseen."""
        binding, repo = self._branch(goal_id, branch)
        recorded = self._made_by_goalsui(goal_id, branch, "approve")
        reviewed = repo.resolve_commit(sha) if sha else recorded
        tip = repo.head_of(branch)
        if tip != reviewed:
            self.ctx.journal.record(
                "nightshift approve refused", goal_id, f"{branch}: reviewed {reviewed}, now {tip}"
            )
            raise ValidationError(
                f"{plain(branch, limit=80)} moved since it was reviewed: reviewed {reviewed[:12]}, "
                f"now {tip[:12]}; read 'goalsui nightshift diff' and approve with --sha {tip[:12]} "
                "to merge the new commit"
            )
        try:
            merged = repo.merge(
                branch, binding.base, f"nightshift: merge {branch} (approved)", tip=reviewed
            )
        except GitError as exc:
            self.ctx.journal.record("nightshift approve refused", goal_id, f"{branch}: {exc}")
            raise
        repo.delete_branch(branch, expected=reviewed)
        self._mark(goal_id, branch, rules.APPROVED)
        self.ctx.journal.record(
            "nightshift approved", goal_id, f"{branch} -> {binding.base} (commit {reviewed[:12]})"
        )
        self.ctx.changed("goals")
        return merged

    def reject(self, goal_id: str, branch: str) -> str:
        """Delete the branch; the base branch is not touched. Only a branch goalsui made."""
        _, repo = self._branch(goal_id, branch)
        self._made_by_goalsui(goal_id, branch, "reject")
        repo.delete_branch(branch)
        self._mark(goal_id, branch, rules.REJECTED)
        self.ctx.done("goals", "nightshift rejected", goal_id, branch)
        return f"deleted {branch}"

    def _mark(self, goal_id: str, branch: str, status: str) -> None:
        item = self._item_for_branch(goal_id, branch)
        if item is not None:
            self.set_item(goal_id, replace(item, status=status))

    def decisions_since(self, goal_id: str, since: datetime) -> list[str]:
        """The approvals and rejections journaled for the goal since ``since``, oldest first."""
        return [
            f"{entry.action.split()[1]}: {plain(entry.detail, limit=200)}"
            for entry in reversed(self.ctx.journal.recent(limit=2000))
            if entry.action in ("nightshift approved", "nightshift rejected")
            and entry.subject == goal_id
            and entry.at >= since
        ]
