"""A nightshift goal's binding (``nightshift.yaml``: repo, base, check) and its plan in
``state.yaml``, changed by locked, atomic, comment-keeping writes."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from goalsui.domain.nightshift import PlanItem, item_from_yaml
from goalsui.errors import KBError
from goalsui.kb.atomic import atomic_write
from goalsui.kb.authoring import STATE_FILE
from goalsui.kb.repo import Repo
from goalsui.kb.yamlio import line_of_key, load_yaml_mapping, roundtrip_update

BINDING_FILE = "nightshift.yaml"

_KEYS = {"repo", "base", "check"}


@dataclass(frozen=True)
class Binding:
    """Where a nightshift goal works."""

    repo: Path
    base: str
    check: tuple[str, ...] | None = None

    def as_yaml(self) -> dict[str, object]:
        check = {"check": list(self.check)} if self.check else {}
        return {"repo": str(self.repo), "base": self.base, **check}


def load_binding(goal_dir: Path, display: str = BINDING_FILE) -> Binding | None:
    """The goal's binding, None when it is not a nightshift goal; KBError when invalid."""
    path = goal_dir / BINDING_FILE
    if not path.exists():
        return None
    data, text = load_yaml_mapping(path, display)
    if unknown := sorted(set(data) - _KEYS):
        raise KBError(display, f"unknown field {unknown[0]!r}", line_of_key(text, unknown[0]))
    repo, base, check = data.get("repo"), data.get("base") or "main", data.get("check")
    if not isinstance(repo, str) or not os.path.isabs(repo):
        line = line_of_key(text, "repo")
        raise KBError(display, "repo must be the absolute path of a git work tree", line)
    if not isinstance(base, str) or not base.strip():
        raise KBError(display, "base must name a branch", line_of_key(text, "base"))
    if check is not None and (
        not isinstance(check, list) or not check or not all(isinstance(a, str) for a in check)
    ):
        line = line_of_key(text, "check")
        raise KBError(display, "check must be a command as a list of strings", line)
    return Binding(Path(repo), base.strip(), tuple(check) if check else None)


def checked_repo(binding: Binding) -> Repo:
    """The bound repository, refusing anything that is not a git work tree."""
    repo = Repo(binding.repo)
    if not repo.is_work_tree():
        raise KBError(BINDING_FILE, f"{binding.repo} is not the top of a git work tree")
    if not repo.branch_exists(binding.base):
        raise KBError(BINDING_FILE, f"the base branch {binding.base!r} does not exist")
    return repo


@contextlib.contextmanager
def _locked(goal_dir: Path) -> Iterator[None]:
    lock = goal_dir / ".state.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_plan(goal_dir: Path) -> list[PlanItem]:
    """Every well-formed plan item of the goal, in file order."""
    _, raw = _state_list(goal_dir / STATE_FILE, "plan")
    return [item for item in map(item_from_yaml, raw) if item is not None]


def _state_list(path: Path, key: str) -> tuple[str, list[object]]:
    """``state.yaml``'s text ("" if none) and its list under ``key``; KBError if not a list."""
    if not path.exists():
        return "", []
    data, text = load_yaml_mapping(path, STATE_FILE)
    value = data.get(key) or []
    if not isinstance(value, list):
        raise KBError(STATE_FILE, f"{key} must be a list")
    return text, value


def update_plan(
    goal_dir: Path, change: Callable[[list[PlanItem], list[object]], list[object] | None]
) -> None:
    """Read the plan, let ``change(items, raw_plan)`` return the new raw plan, write it."""
    path = goal_dir / STATE_FILE
    with _locked(goal_dir):
        text, raw = _state_list(path, "plan")
        new_raw = change([i for i in map(item_from_yaml, raw) if i is not None], list(raw))
        if new_raw is None:
            return
        atomic_write(path, roundtrip_update(text, {"plan": new_raw}, display=STATE_FILE))


def append_decision(goal_dir: Path, text: str) -> None:
    """Add one line to ``decisions:`` in ``state.yaml``."""
    path = goal_dir / STATE_FILE
    with _locked(goal_dir):
        text_now, decisions = _state_list(path, "decisions")
        if text in decisions:
            return
        updated = roundtrip_update(text_now, {"decisions": [*decisions, text]}, display=STATE_FILE)
        atomic_write(path, updated)
