"""KB files of one goal tree: list, read, write (confined to the goal), the goal log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goalsui.domain.states import ChangeTopic
from goalsui.service import kbindex
from goalsui.service.context import ServiceContext


def kb_write(ctx: ServiceContext, goal_id: str, rel: str, text: str) -> None:
    """Write a file of a goal tree atomically; a definition change re-plans at once."""
    ctx.kb.kb_write(goal_id, rel, text)
    ctx.journal("file written", f"{goal_id}/{rel}")
    if rel.endswith("definition.yaml"):
        kbindex.sync_kb(ctx, [goal_id])
    ctx.changed(ChangeTopic.FILES)


def kb_list(ctx: ServiceContext, goal_id: str, rel: str = ".") -> list[dict[str, Any]]:
    """The entries of a folder of one goal tree."""
    return ctx.kb.kb_list(goal_id, rel)


def kb_read(ctx: ServiceContext, goal_id: str, rel: str) -> str:
    """The text of a file of one goal tree."""
    return ctx.kb.kb_read(goal_id, rel)


def kb_path(ctx: ServiceContext, goal_id: str, rel: str = ".") -> Path:
    """The confined path of a file or folder in one goal tree (e.g. for $EDITOR)."""
    return ctx.kb.resolve(goal_id, rel)


def append_goal_log(ctx: ServiceContext, goal_id: str, text: str) -> tuple[Path, int]:
    """Append to the goal's log of today; returns the file and its new size."""
    return ctx.kb.append_log(goal_id, text, ctx.now())
