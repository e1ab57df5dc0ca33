"""The operator's nightshift bindings (repository, base, check), kept in the journal out
of every agent tool's reach, and ``doctor``'s word when ``nightshift.yaml`` drifts from them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from sqlmodel import col, select

from goalsui.domain.views import Problem
from goalsui.errors import GoalsuiError
from goalsui.kb import nightshift as files
from goalsui.kb.nightshift import Binding
from goalsui.service.context import ServiceContext
from goalsui.store.models import Journal

#: the journal action that records the binding the operator set (repo, base, check)
BINDING_RECORD = "nightshift binding"


def record_binding(ctx: ServiceContext, goal_id: str, binding: Binding) -> None:
    """Record, in the database (out of every agent tool's reach), the repository, base and
    check the operator chose: goalsui acts on these, whatever ``nightshift.yaml`` says later."""
    ctx.journal.record(BINDING_RECORD, goal_id, json.dumps(binding.as_yaml(), sort_keys=True))


def recorded_binding(ctx: ServiceContext, goal_id: str) -> Binding | None:
    """The binding the operator last set for the goal, None when none was recorded."""
    rows = journal_details(ctx, BINDING_RECORD, goal_id)
    if not rows:
        return None
    data = json.loads(rows[-1])
    check = data.get("check")
    return Binding(Path(data["repo"]), str(data["base"]), tuple(check) if check else None)


def binding_problems(ctx: ServiceContext) -> list[Problem]:
    """For ``doctor``: each nightshift goal whose ``nightshift.yaml`` differs from what the
    operator set, has no record of it, or names a repository or base that is unusable."""
    problems: list[Problem] = []
    for goal_id in ctx.kb.goal_ids():
        shown = f"{goal_id}/{files.BINDING_FILE}"
        try:
            on_file = files.load_binding(ctx.kb.goal_dir(goal_id))
        except GoalsuiError:
            continue  # reported with its line by the KB scan
        if on_file is None:
            continue
        recorded = recorded_binding(ctx, goal_id)
        if recorded is None:
            trust = f"'goalsui nightshift trust --goal {goal_id}'"
            message = f"no record of the operator's binding; check the file and run {trust}"
            problems.append(Problem(shown, None, message))
        elif recorded != on_file:
            changed = ", ".join(
                f"{key} {_shown(on_file, key)} (set: {_shown(recorded, key)})"
                for key in ("repo", "base", "check")
                if _shown(on_file, key) != _shown(recorded, key)
            )
            message = (
                f"changed since the operator set it: {changed}; goalsui keeps using what "
                "was set ('goalsui nightshift trust' accepts the file)"
            )
            problems.append(Problem(shown, None, message))
        try:
            files.checked_repo(recorded or on_file)
        except GoalsuiError as exc:
            problems.append(Problem(shown, None, f"the repository cannot be used: {exc}"))
    return problems


def _shown(binding: Binding, key: str) -> str:
    value = getattr(binding, key)
    if key == "check":
        return shlex.join(value) if value else "none"
    return str(value)


def journal_details(ctx: ServiceContext, action: str, subject: str) -> list[str]:
    """The details of the journal entries of ``action`` on ``subject``, oldest first."""
    with ctx.store.read() as s:
        rows = s.exec(
            select(Journal.detail)
            .where(Journal.action == action, Journal.subject == subject)
            .order_by(col(Journal.id))
        ).all()
    return [str(r) for r in rows]
