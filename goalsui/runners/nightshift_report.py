"""The morning report's nightshift part: every planned task with its branch and result."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from goalsui.domain.nightshift import PlanItem
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.kb import nightshift as files
from goalsui.service import nightshift as ns

if TYPE_CHECKING:
    from goalsui.service import Service

MAX_DIFFSTAT_LINES = 30


def _cell(text: object) -> str:
    return plain(str(text), limit=120).replace("|", "\\|").replace("\n", " ")


def nightshift_section(service: Service, goal_id: str, day: date, since: datetime) -> list[str]:
    """Markdown lines for the night before ``day``; empty for a goal that is no nightshift."""
    goal_dir = service.kb.goal_dir(goal_id)
    try:
        binding = files.load_binding(goal_dir)
    except GoalsuiError as exc:
        return ["", "## Branches", "", f"The nightshift binding is broken: {plain(str(exc))}"]
    if binding is None:
        return []
    night = day - timedelta(days=1)
    items = ns.plan_list(service, goal_id, night)
    lines = ["", "## Branches", ""]
    lines.append(f"Repository `{binding.repo}`, base `{binding.base}`, night of {night}.")
    lines.append("")
    if not items:
        lines.append("Nothing was planned for this night (source: state.yaml plan).")
    else:
        lines.append("| worker | task | status | branch | commits | check | run |")
        lines.append("| --- | --- | --- | --- | ---: | --- | ---: |")
        for i in items:
            lines.append(
                f"| {_cell(i.worker)} | {_cell(i.task)} | {_cell(i.status)}"
                + (f": {_cell(i.reason)}" if i.reason and i.status == "failed" else "")
                + f" | {_cell(i.branch or '-')} | {i.commits if i.commits is not None else '-'} "
                f"| {_cell(i.check or '-')} | {i.run_id or '-'} |"
            )
    lines += _diffstats(binding, items)
    idle = sorted(set(ns.task_workers(service, goal_id)) - {i.worker for i in items})
    if idle:
        lines += ["", f"Nothing planned (skipped, no runner call): {', '.join(idle)}."]
    decided = ns.decisions_since(service, goal_id, since)
    if decided:
        lines += ["", "Decisions since the last report:", ""]
        lines += [f"- {d}" for d in decided]
    return lines


def _diffstats(binding: files.Binding, items: list[PlanItem]) -> list[str]:
    lines: list[str] = []
    try:
        repo = files.checked_repo(binding)
    except GoalsuiError as exc:
        return ["", f"The repository cannot be read: {plain(str(exc))}"]
    for i in items:
        if not i.branch or not i.commits or not repo.branch_exists(i.branch):
            continue
        stat = repo.diffstat(binding.base, i.branch).splitlines()[:MAX_DIFFSTAT_LINES]
        lines += ["", f"### {plain(i.branch)} (run {i.run_id})", ""]
        if i.summary:
            lines += [f"Agent's summary: {plain(i.summary, limit=300)}", ""]
        lines += ["```", *[plain(s) for s in stat], "```", ""]
    return lines
