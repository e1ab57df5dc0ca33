"""KB files of one goal tree (``service.files``): list, read, write (confined), the goal log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goalsui.domain.states import ChangeTopic
from goalsui.errors import ValidationError
from goalsui.kb.confined import ConfinedTree
from goalsui.service.context import ServiceContext
from goalsui.service.kbindex import Index


def _is_definition(parts: tuple[str, ...]) -> bool:
    """A definition file: the goal's or a worker's ``definition.yaml``, or ``nightshift.yaml``."""
    return parts in (("definition.yaml",), ("nightshift.yaml",)) or (
        len(parts) == 3 and parts[0] == "workers" and parts[2] == "definition.yaml"
    )


class Files:
    """The files of the goal trees, as the operator edits them."""

    def __init__(self, ctx: ServiceContext, index: Index) -> None:
        self.ctx = ctx
        self.index = index

    def tree(self, goal_id: str) -> ConfinedTree:
        """One goal tree's confined files (paths, parts)."""
        return self.ctx.kb.tree(goal_id)

    def write(self, goal_id: str, rel: str, text: str, *, definitions: bool = True) -> str:
        """Write a file of a goal tree atomically, YAML and definitions validated first; a
        definition change re-plans at once. Returns the path written, relative to the goal.

        ``definitions=False`` (an agent's write) refuses definitions: a runner is the
        program goalsui starts, never an agent's pick."""

        def validate(parts: tuple[str, ...], body: str, shown: str) -> None:
            if not definitions and _is_definition(parts):
                raise ValidationError(
                    f"{shown}: definitions (files that choose a program or a repository) "
                    "are not written by agents "
                    "(update_worker changes a worker's schedule, timeout and prompt)"
                )
            self.ctx.kb.check_text(goal_id, parts, body, shown)  # state.yaml's bound too

        tree = self.tree(goal_id)
        path = tree.write(rel, text, validate=validate)
        shown = "/".join(tree.parts(path))
        self.ctx.journal.record("file written", f"{goal_id}/{shown}", f"{len(text)} characters")
        if path.name == "definition.yaml":
            self.index.sync([goal_id])
        self.ctx.changed(ChangeTopic.FILES)
        return shown

    def read(self, goal_id: str, rel: str) -> str:
        """The text of a file of one goal tree."""
        return self.ctx.kb.tree(goal_id).read(rel)

    def path(self, goal_id: str, rel: str = ".") -> Path:
        """The confined path of a file or folder in one goal tree (e.g. for $EDITOR)."""
        return self.ctx.kb.tree(goal_id).resolve(rel)

    def append_log(self, goal_id: str, text: str) -> tuple[Path, int]:
        """Append to the goal's log of today; returns the file and its new size."""
        return self.ctx.kb.tree(goal_id).append_log(text, self.ctx.now())

    def list(self, goal_id: str, rel: str = ".") -> list[dict[str, Any]]:
        """The entries of a folder of one goal tree."""
        return self.ctx.kb.tree(goal_id).list(rel)
