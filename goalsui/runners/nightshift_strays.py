"""After a nightshift task, refs it moved go to ``nightshift/<night>/review-<worker>-<ref>`` and
back; others' are only flagged (docs/nightshift.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import partial

from goalsui.domain import nightshift as rules
from goalsui.errors import GoalsuiError
from goalsui.kb.repo import Repo

#: committer addresses of nightshift tasks end with this (``run-<id>.<worker>@…``)
MARK_DOMAIN = "@nightshift.goalsui.invalid"


def committer_mark(run_id: int, worker: str) -> str:
    return f"run-{run_id}.{worker}{MARK_DOMAIN}"


def committer_env(run_id: int, worker: str) -> dict[str, str]:
    """The committer identity of a task's git commands (the author stays the user's)."""
    return {
        "GIT_COMMITTER_NAME": f"goalsui nightshift {worker}",
        "GIT_COMMITTER_EMAIL": committer_mark(run_id, worker),
    }


@dataclass(frozen=True)
class Stray:
    """One ref outside the task's branch that moved during the task, and what was done."""

    ref: str
    new: str | None
    moved_to: str | None  # the review branch the commits were moved to, if they were
    note: str

    @property
    def flagged_only(self) -> bool:
        return self.moved_to is None


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/").removeprefix("refs/tags/")


def _review_name(repo: Repo, night: date, worker: str, ref: str) -> str:
    stem = f"{rules.BRANCH_PREFIX}{night.isoformat()}/review-{worker}-{rules.slug(_short(ref))}"
    name, n = stem, 1
    while repo.branch_exists(name):
        n += 1
        name = f"{stem}-{n}"
    return name


def check_strays(
    repo: Repo,
    before: dict[str, str],
    *,
    task_branch: str,
    night: date,
    worker: str,
    mark: str,
) -> list[Stray]:
    """Judge every ref that moved since ``before`` (see the module's text)."""
    after = repo.refs()
    mine = f"refs/heads/{task_branch}"
    known = sorted(set(before.values()))
    strays: list[Stray] = []
    for ref in sorted(set(before) | set(after)):
        old, new = before.get(ref), after.get(ref)
        if ref == mine or old == new:
            continue
        if new is None:
            strays.append(Stray(ref, None, None, f"{_short(ref)} was deleted during the task"))
            continue
        try:
            strays.append(_judge(repo, ref, old, new, known, night, worker, mark))
        except GoalsuiError as exc:
            strays.append(Stray(ref, new, None, f"{_short(ref)} moved; not restored: {exc}"))
    return [s for s in strays if s.note]


def _judge(
    repo: Repo,
    ref: str,
    old: str | None,
    new: str,
    known: list[str],
    night: date,
    worker: str,
    mark: str,
) -> Stray:
    name = _short(ref)
    stray = partial(Stray, ref, new)
    committers = repo.committers(new, *(k for k in known if k != new)) if known else []
    ours = bool(committers) and all(c == mark for c in committers)
    others_task = bool(committers) and all(
        c.endswith(MARK_DOMAIN) and c != mark for c in committers
    )
    if others_task and ref.startswith(f"refs/heads/{rules.BRANCH_PREFIX}"):
        return stray(None, "")  # another nightshift task's own branch
    forward = old is None or repo.is_ancestor(old, new)
    if not ours or not forward or not ref.startswith("refs/heads/"):
        who = "not by this task" if not ours else "history rewritten"
        return stray(None, f"{name} moved during the task ({who}); left as it is")
    where = repo.worktree_for(name)
    if where is not None and not repo.is_clean(where):
        dirty = f"checked out with uncommitted changes in {where}"
        return stray(None, f"this task committed on {name}, {dirty}; left as it is")
    review = _review_name(repo, night, worker, ref)
    repo.set_ref(f"refs/heads/{review}", new, "")
    if old is None:
        if where is not None:
            return stray(review, f"this task made {name}; copied to {review}")
        repo.delete_ref(ref, new)
        return stray(review, f"this task made {name}; moved to {review}")
    if where is not None:
        if repo.head_of(name) != new:
            raise GoalsuiError(f"{name} moved again meanwhile")
        repo.reset_work_tree(where, old)
    else:
        repo.set_ref(ref, old, new)
    restored = f"{name} restored to {old[:12]}"
    return stray(review, f"this task committed on {name}: moved to {review}, {restored}")
