"""The morning report's nightshift part: every planned task with its branch and result."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING

from goalsui.domain import nightshift as rules
from goalsui.domain.nightshift import PlanItem
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.kb import nightshift as files
from goalsui.runners.report_cost import cell

if TYPE_CHECKING:
    from goalsui.service import Service

MAX_DIFFSTAT_LINES = 30


def nightshift_section(service: Service, goal_id: str, night: date, since: datetime) -> list[str]:
    """Markdown lines for the night of ``night``; empty for a goal that is no nightshift."""
    try:
        binding = service.nightshift.binding_of(goal_id)
    except GoalsuiError as exc:
        return ["", "## Branches", "", f"The nightshift binding is broken: {plain(str(exc))}"]
    if binding is None:
        return []
    items = service.nightshift.plan(goal_id, night)
    where = f"Repository `{binding.repo}`, base `{binding.base}`, night of {night}."
    lines = ["", "## Branches", "", where, ""]
    if not items:
        lines.append("Nothing was planned for this night (source: state.yaml plan).")
    else:
        lines.append("| worker | task | status | branch | commits | check | run |")
        lines.append("| --- | --- | --- | --- | ---: | --- | ---: |")
        for i in items:
            lines.append(
                f"| {cell(i.worker)} | {cell(i.task)} | {cell(i.status)}"
                + (f": {cell(i.reason)}" if i.reason and i.status == rules.FAILED else "")
                + f" | {cell(i.branch or '-')} | {i.commits if i.commits is not None else '-'} "
                f"| {cell(i.check or '-')} | {i.run_id or '-'} |"
            )
    if strays := [i for i in items if i.stray]:
        lines += ["", "Outside the tasks' branches (checked after each task):", ""]
        lines += [
            f"- {cell(i.worker)} (run {i.run_id}): {plain(i.stray or '', limit=400)}"
            for i in strays
        ]
    lines += _diffstats(service, goal_id, binding, items)
    if idle := sorted(set(service.nightshift.task_workers(goal_id)) - {i.worker for i in items}):
        lines += ["", f"Nothing planned (skipped, no runner call): {', '.join(idle)}."]
    if decided := service.nightshift.decisions_since(goal_id, since):
        lines += ["", "Decisions since the last report:", "", *(f"- {d}" for d in decided)]
    return lines


def nightshift_actions(service: Service, goal_id: str, night: date) -> list[str]:
    """What the operator must do about the night (approvals, failed checks, stray commits)."""
    try:
        binding = service.nightshift.binding_of(goal_id)
    except GoalsuiError as exc:
        return [f"- Repair the nightshift binding: {plain(str(exc), limit=200)}."]
    if binding is None:
        return []
    try:
        repo = files.checked_repo(binding)
    except GoalsuiError as exc:
        return [f"- The repository cannot be used: {plain(str(exc), limit=200)}."]
    actions = []
    waiting = [b for b in repo.branches(f"{rules.BRANCH_PREFIX}{night.isoformat()}/")]
    items = {i.branch: i for i in service.nightshift.plan(goal_id, night) if i.branch}
    for branch in waiting:
        item = items.get(branch)
        check = f", check {item.check}" if item and item.check else ""
        actions.append(
            f"- Approve or reject {plain(branch)}{check} "
            f"('goalsui nightshift diff {plain(branch)}', then approve or reject)."
        )
    for item in items.values():
        if item.check and item.check != "passed" and item.branch not in waiting:
            actions.append(
                f"- {plain(item.worker)}'s check {plain(item.check)} on {plain(item.branch or '-')}."
            )
        if item.stray:
            actions.append(
                f"- Look at what moved outside {plain(item.worker)}'s branch: {plain(item.stray, limit=300)}."
            )
    return actions


def _diffstats(
    service: Service, goal_id: str, binding: files.Binding, items: list[PlanItem]
) -> list[str]:
    lines: list[str] = []
    try:
        repo = files.checked_repo(binding)
    except GoalsuiError as exc:
        return ["", f"The repository cannot be read: {plain(str(exc))}"]
    reviewed = service.nightshift.branch_records(goal_id)
    for i in items:
        if not i.branch or not i.commits or not repo.branch_exists(i.branch):
            continue
        sha = reviewed.get(i.branch)
        shown = sha if sha and repo.has_commit(sha) else i.branch
        stat = repo.diffstat(binding.base, shown).splitlines()[:MAX_DIFFSTAT_LINES]
        commit = f", commit {sha[:12]}" if sha else ", not recorded by goalsui"
        lines += ["", f"### {plain(i.branch)} (run {i.run_id}{commit})", ""]
        if i.summary:
            lines += [f"Agent's summary: {plain(i.summary, limit=300)}", ""]
        lines += ["```", *[plain(s) for s in stat], "```", ""]
    return lines
