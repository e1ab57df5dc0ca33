"""Goal ids as people type them: the full id, a unique prefix, or the slug (the id
without its 8-hex suffix); otherwise "did you mean ..." with the closest ids."""

from __future__ import annotations

import difflib

from goalsui.errors import NotFound, ValidationError
from goalsui.service.context import ServiceContext


def _slug(goal_id: str) -> str:
    head, _, tail = goal_id.rpartition("-")
    return head if head and len(tail) == 8 else goal_id


def resolve_goal_id(ctx: ServiceContext, text: str) -> str:
    """The goal id ``text`` stands for: an exact id, else one id or slug prefix match.

    Several matches are refused; none raises NotFound with the closest ids, if any, else
    returns ``text``."""
    text = text.strip()
    ids = ctx.kb.goal_ids()
    if not text or text in ids:
        return text
    found = sorted({g for g in ids if g.startswith(text) or _slug(g) == text})
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(found[:6]) + (" ..." if len(found) > 6 else "")
        raise ValidationError(f"goal '{text}' is ambiguous: {shown}")
    by_slug = {_slug(g): g for g in ids}
    close = difflib.get_close_matches(text, [*ids, *by_slug], n=3, cutoff=0.6)
    if not close:
        return text
    names = list(dict.fromkeys(by_slug.get(c, c) for c in close))
    raise NotFound(f"no goal '{text}'; did you mean {' or '.join(names)}?")
