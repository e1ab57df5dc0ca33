"""Adding and removing a worker whole or not at all: written in a hidden staging folder, validated,
renamed into place (renamed aside to remove)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable

from goalsui.domain.names import check_name
from goalsui.errors import KBError, ValidationError
from goalsui.kb.atomic import fsync_dir
from goalsui.kb.config import WorkerDef, parse_worker
from goalsui.kb.layout import KB, WorkerSeed, remove_tree
from goalsui.kb.paths import safe_join
from goalsui.kb.regular import read_text
from goalsui.kb.yamlio import load_yaml_mapping


def _goal_texts(kb: KB, goal_id: str) -> tuple[str, str, str]:
    """(name, task, protocol text) of a goal, for rendering a worker's prompt."""
    gdir = kb.goal_dir(goal_id)
    goal = kb.goal_definition(goal_id, gdir)
    protocol = ""
    with contextlib.suppress(OSError, KBError):
        protocol = read_text(gdir / "protocol.md", display=f"{goal_id}/protocol.md")
    return goal.name, goal.task, protocol


def add_worker(
    kb: KB, goal_id: str, seed: WorkerSeed, *, register: Callable[[], object] | None = None
) -> WorkerDef:
    """Create ``workers/<name>/`` in one rename; removed again if ``register`` fails."""
    check_name(seed.name, "worker name")
    name, task, protocol = _goal_texts(kb, goal_id)
    root = safe_join(kb.goal_dir(goal_id), "workers")
    final = safe_join(root, seed.name)
    if final.exists() or final.is_symlink():
        raise ValidationError(f"goal '{goal_id}' already has a worker '{seed.name}'")
    made_root = not root.exists()
    root.mkdir(exist_ok=True)
    kb.check_inside(root, f"{goal_id}/workers")
    staging = safe_join(root, f".staging-{seed.name}-{uuid.uuid4().hex[:6]}")
    shown = f"{goal_id}/workers/{seed.name}/definition.yaml"
    renamed = False
    try:
        seed.write(staging, name, task, protocol)
        data, text = load_yaml_mapping(staging / "definition.yaml", shown)
        definition = parse_worker(seed.name, data, text, shown)
        os.rename(staging, final)
        renamed = True
        fsync_dir(root)
        if register is not None:
            register()
    except BaseException as exc:
        remove_tree(root, final if renamed else staging)
        if made_root:
            with contextlib.suppress(OSError):
                root.rmdir()
        if isinstance(exc, OSError):
            raise KBError(shown, f"could not create the worker: {exc.strerror or exc}") from exc
        raise
    return definition


def remove_worker(kb: KB, goal_id: str, worker: str) -> None:
    """Remove ``workers/<worker>/`` (renamed aside first, then deleted)."""
    path = kb.worker_dir(goal_id, worker)
    remove_tree(path.parent, path)
