"""Names, slugs and path safety: every path goalsui touches stays inside the KB root."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from goalsui.domain.names import check_name
from goalsui.errors import NotFound, ValidationError

#: the KB's own settings file, at its root
CONFIG_FILE = "goalsui.yaml"


def new_goal_id(name: str) -> str:
    """An ASCII slug of ``name`` (letters, digits, single dashes; at most 32 characters,
    ``goal`` when none is left), ``-`` and 8 hex digits."""
    norm = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", norm.lower()).strip("-")[:32].strip("-")
    return check_name(f"{slug or 'goal'}-{os.urandom(4).hex()}", "goal id")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _looks_like_traversal(comp: str) -> bool:
    """A name a tool could read as ``..`` or a separator (look-alikes too), or control chars."""
    if _CONTROL.search(comp):
        return True
    if comp.isascii():
        return False
    folded = unicodedata.normalize("NFKC", comp)
    return (
        folded in (".", "..")
        or any(sep in folded for sep in ("/", "\\"))
        or folded.strip(". ") == ""
        or any(ch in comp for ch in "\u2215\u2044\u29f8\uff0f\uff3c")
    )


def safe_join(root: Path, *parts: str) -> Path:
    """Join ``parts`` under ``root``; refuse absolute parts, ``..``, NUL and symlinks out of it."""
    root_resolved = Path(root).resolve()
    rel_parts: list[str] = []
    for part in parts:
        if not isinstance(part, str) or part == "":
            raise ValidationError("empty path")
        if "\x00" in part:
            raise ValidationError("path contains a NUL byte")
        if os.path.isabs(part) or part.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", part):
            raise ValidationError(f"absolute path not allowed: {part!r}")
        for comp in re.split(r"[/\\]", part):
            if comp == "..":
                raise ValidationError(f"path leaves its folder: {part!r}")
            if comp in ("", "."):
                continue
            if _looks_like_traversal(comp):
                raise ValidationError(f"path uses look-alike characters: {part!r}")
            rel_parts.append(comp)
    candidate = root_resolved.joinpath(*rel_parts)
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root_resolved):
        raise ValidationError(f"path leads outside the KB: {'/'.join(rel_parts)!r}")
    return candidate


def goal_dir(root: Path, goal_id: str) -> Path:
    """The folder of goal ``goal_id`` in the KB at ``root``: a valid name, inside the root,
    holding a ``definition.yaml`` (checked by existence: a FIFO or folder in its place is a
    goal with a problem)."""
    check_name(goal_id, "goal id")
    path = safe_join(root, goal_id)
    if not (path / "definition.yaml").exists():
        raise NotFound(f"no goal '{goal_id}' in the KB")
    return path
