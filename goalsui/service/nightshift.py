"""The nightshift's service operations: bind a goal to a repository, plan the night,
list the branches the night produced, and approve (merge) or reject (delete) them.

Every decision is journaled (action ``nightshift ...``, subject the goal) so the next
morning report can show it. The console and the CLI both call these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goalsui.domain import nightshift as rules
from goalsui.domain.timeutil import load_zone
from goalsui.domain.untrusted import plain
from goalsui.errors import NotFound, ValidationError
from goalsui.kb import nightshift as files
from goalsui.kb.nightshift import Binding
from goalsui.kb.paths import check_name
from goalsui.kb.repo import GitError, Repo
from goalsui.service.nightshift_templates import render_goal_files, worker_seeds

if TYPE_CHECKING:
    from goalsui.service import GoalView, Service

COMMANDER = "commander"
REPORTER = "reporter"
ROLES = (COMMANDER, REPORTER)


@dataclass(frozen=True)
class BranchView:
    """One branch the nightshift produced, with what the plan knows of it."""

    branch: str
    commits: int
    diffstat: str
    item: rules.PlanItem | None

    def as_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "commits": self.commits,
            "diffstat": self.diffstat,
            "item": self.item.as_json() if self.item else None,
        }


def init_nightshift(
    service: Service,
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
    view = service.setup_goal(
        title,
        f"Work the backlog of {repo.path} overnight: one atomic task per slot, each on its "
        f"own branch from {base}, approved or rejected in the morning.",
        seeds,
        files=render_goal_files(binding, tz, [s.name for s in seeds]),
    )
    service.journal("nightshift init", view.goal_id, f"repo {repo.path} base {base}")
    return view


def nightshift_goal(service: Service, goal_id: str | None = None) -> tuple[str, Binding]:
    """The named nightshift goal, or the KB's only one; with its binding."""
    if goal_id:
        binding = files.load_binding(service.kb.goal_dir(goal_id))
        if binding is None:
            raise ValidationError(f"goal {goal_id} is not a nightshift (no nightshift.yaml)")
        return goal_id, binding
    found = []
    for gid in service.kb.goal_ids():
        binding = files.load_binding(service.kb.goal_dir(gid))
        if binding is not None:
            found.append((gid, binding))
    if not found:
        raise NotFound("no nightshift goal in this KB; create one with 'goalsui nightshift init'")
    if len(found) > 1:
        names = ", ".join(g for g, _ in found)
        raise ValidationError(f"several nightshift goals ({names}); name one with --goal")
    return found[0]


def current_night(service: Service, binding_tz: str, now: datetime | None = None) -> date:
    local = (now or service.now()).astimezone(load_zone(binding_tz))
    return rules.night_of(local)


def goal_timezone(service: Service, goal_id: str) -> str:
    """The timezone of the goal's commander (the schedules' zone), else UTC."""
    loaded = service.kb.load_goal(goal_id)
    worker = loaded.workers.get(COMMANDER)
    return str(worker.schedule.timezone) if worker and worker.schedule else "UTC"


def task_workers(service: Service, goal_id: str) -> list[str]:
    """The workers that take tasks (every worker but the commander and the reporter)."""
    return sorted(w for w in service.kb.load_goal(goal_id).workers if w not in ROLES)


def plan_add(
    service: Service,
    goal_id: str,
    worker: str,
    task: str,
    *,
    night: date | None = None,
    reason: str | None = None,
) -> tuple[rules.PlanItem, bool]:
    """Put a task into the night's plan; the same (night, worker, task) is added once.

    Returns the item and whether it was created.
    """
    check_name(worker, "worker name")
    if worker not in task_workers(service, goal_id):
        choices = ", ".join(task_workers(service, goal_id)) or "none"
        raise ValidationError(f"{worker!r} is not a task worker of {goal_id} (workers: {choices})")
    task = rules.check_task(task)
    night = night or current_night(service, goal_timezone(service, goal_id))
    item = rules.PlanItem(night=night, worker=worker, task=task, reason=reason)
    created: list[bool] = []

    def change(items: list[rules.PlanItem], raw: list[object]) -> list[object] | None:
        if any(i.key == item.key for i in items):
            return None
        created.append(True)
        return [*raw, item.as_yaml()]

    files.update_plan(service.kb.goal_dir(goal_id), change)
    if created:
        if reason:
            files.append_decision(
                service.kb.goal_dir(goal_id), f"{night}: {worker} takes '{task}' because {reason}"
            )
        service.journal("nightshift plan add", goal_id, f"{night} {worker}: {task}")
        service.changed("goals")
    return item, bool(created)


def plan_list(service: Service, goal_id: str, night: date | None = None) -> list[rules.PlanItem]:
    items = files.read_plan(service.kb.goal_dir(goal_id))
    return [i for i in items if night is None or i.night == night]


def set_item(service: Service, goal_id: str, updated: rules.PlanItem) -> None:
    """Replace the plan item with the same (night, worker, task)."""

    def change(items: list[rules.PlanItem], raw: list[object]) -> list[object] | None:
        out: list[object] = []
        for entry in raw:
            parsed = rules.item_from_yaml(entry)
            out.append(updated.as_yaml() if parsed and parsed.key == updated.key else entry)
        return out

    files.update_plan(service.kb.goal_dir(goal_id), change)


def _item_for_branch(service: Service, goal_id: str, branch: str) -> rules.PlanItem | None:
    return next((i for i in plan_list(service, goal_id) if i.branch == branch), None)


def list_branches(service: Service, goal_id: str) -> list[BranchView]:
    """Every ``nightshift/`` branch of the bound repository, newest night first."""
    _, binding = nightshift_goal(service, goal_id)
    repo = files.checked_repo(binding)
    views = []
    for branch in repo.branches(rules.BRANCH_PREFIX):
        commits = repo.commits(binding.base, branch)
        views.append(
            BranchView(
                branch=branch,
                commits=len(commits),
                diffstat=repo.diffstat(binding.base, branch),
                item=_item_for_branch(service, goal_id, branch),
            )
        )
    views.sort(key=lambda v: (v.branch.split("/")[1], v.branch))
    views.sort(key=lambda v: v.branch.split("/")[1], reverse=True)  # newest night first
    return views


def branch_diff(service: Service, goal_id: str, branch: str) -> str:
    _, binding = nightshift_goal(service, goal_id)
    repo = _checked_branch(binding, branch)
    return repo.diff(binding.base, branch)


def _checked_branch(binding: Binding, branch: str) -> Repo:
    if not branch.startswith(rules.BRANCH_PREFIX) or ".." in branch:
        raise ValidationError(f"{plain(branch, limit=80)!r} is not a nightshift branch")
    repo = files.checked_repo(binding)
    if not repo.branch_exists(branch):
        raise NotFound(f"no branch {plain(branch, limit=80)} in {binding.repo}")
    return repo


def approve(service: Service, goal_id: str, branch: str) -> str:
    """Merge the branch into the base with a merge commit, then delete it."""
    _, binding = nightshift_goal(service, goal_id)
    repo = _checked_branch(binding, branch)
    try:
        result = repo.merge(branch, binding.base, f"nightshift: merge {branch} (approved)")
    except GitError as exc:
        service.journal("nightshift approve refused", goal_id, f"{branch}: {exc}")
        raise
    repo.delete_branch(branch)
    _mark(service, goal_id, branch, rules.APPROVED)
    service.journal("nightshift approved", goal_id, f"{branch} -> {binding.base}")
    service.changed("goals")
    return result.message


def reject(service: Service, goal_id: str, branch: str) -> str:
    """Delete the branch; the base branch is not touched."""
    _, binding = nightshift_goal(service, goal_id)
    repo = _checked_branch(binding, branch)
    repo.delete_branch(branch)
    _mark(service, goal_id, branch, rules.REJECTED)
    service.journal("nightshift rejected", goal_id, branch)
    service.changed("goals")
    return f"deleted {branch}"


def _mark(service: Service, goal_id: str, branch: str, status: str) -> None:
    item = _item_for_branch(service, goal_id, branch)
    if item is not None:
        from dataclasses import replace

        set_item(service, goal_id, replace(item, status=status))


def decisions_since(service: Service, goal_id: str, since: datetime) -> list[str]:
    """The approvals and rejections journaled for the goal since ``since``, oldest first."""
    lines = []
    for entry in reversed(service.list_journal(limit=2000)):
        decided = entry.action in ("nightshift approved", "nightshift rejected")
        if decided and entry.subject == goal_id and entry.at >= since:
            lines.append(f"{entry.action.split()[1]}: {plain(entry.detail, limit=200)}")
    return lines
