"""KB files of one goal tree (``service.files``): list, read, write (confined), the goal log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goalsui.domain.states import ChangeTopic
from goalsui.service.context import ServiceContext
from goalsui.service.kbindex import Index


class Files:
    """The files of the goal trees, as the operator edits them."""

    def __init__(self, ctx: ServiceContext, index: Index) -> None:
        self.ctx = ctx
        self.index = index

    def write(self, goal_id: str, rel: str, text: str) -> None:
        """Write a file of a goal tree atomically; a definition change re-plans at once."""
        self.ctx.kb.kb_write(goal_id, rel, text)
        self.ctx.journal.record("file written", f"{goal_id}/{rel}")
        if rel.endswith("definition.yaml"):
            self.index.sync([goal_id])
        self.ctx.changed(ChangeTopic.FILES)

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
