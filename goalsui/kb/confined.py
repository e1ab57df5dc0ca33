"""File access confined to one goal tree (agents and ``goalsui kb``): no escape by path or symlink,
no non-regular file, ``log/`` append-only; atomic writes."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goalsui.errors import NotFound, ValidationError
from goalsui.kb.atomic import append_line, atomic_write
from goalsui.kb.paths import goal_dir, safe_join
from goalsui.kb.regular import describe_mode, read_text

MAX_FILE_BYTES = 2 * 1024 * 1024
LOG_DIR = "log"

#: called with (path parts inside the tree, text, shown name) before a write; raises to refuse
Validator = Callable[[tuple[str, ...], str, str], None]


class ConfinedTree:
    """One goal directory and the file operations allowed inside it."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = Path(root).resolve()
        self.name = name  # how paths are shown: ``<name>/<rel>``

    def shown(self, rel: str) -> str:
        return f"{self.name}/{rel.strip('/')}" if rel not in ("", ".") else self.name

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` (symlinks resolved), proven inside the tree."""
        if not isinstance(rel, str):
            raise ValidationError("a path must be text")
        if rel in ("", "."):
            return self.root
        candidate = safe_join(self.root, rel)  # refuses absolute, .., look-alikes
        real = candidate.resolve()
        if not real.is_relative_to(self.root):
            raise ValidationError(f"path leads outside the goal: {rel!r}")
        return real

    def parts(self, real: Path) -> tuple[str, ...]:
        return real.relative_to(self.root).parts

    def list(self, rel: str = ".") -> list[dict[str, Any]]:
        """The entries of a folder: name, path, dir, size, modified (links out are hidden)."""
        folder = self.resolve(rel)
        if not folder.is_dir():
            raise NotFound(f"not a folder: {self.shown(rel)}")
        out = []
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                continue
            path = Path(entry.path)
            try:
                real = path.resolve()
                st = real.stat()
            except OSError:  # a dangling link or a file removed meanwhile
                continue
            if not real.is_relative_to(self.root):
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if not (is_dir or stat.S_ISREG(st.st_mode)):
                continue
            out.append(
                {
                    "name": entry.name,
                    "path": str(path.relative_to(self.root)),
                    "dir": is_dir,
                    "size": st.st_size,
                    "modified": datetime.fromtimestamp(st.st_mtime, UTC),
                }
            )
        return out

    def _regular(self, real: Path, rel: str) -> os.stat_result | None:
        """The file's stat if it exists; refuses anything but a regular file."""
        try:
            st = real.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ValidationError(f"cannot use {self.shown(rel)}: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ValidationError(
                f"{self.shown(rel)}: not a regular file: {describe_mode(st.st_mode)}"
            )
        return st

    def read(self, rel: str, *, limit: int = MAX_FILE_BYTES) -> str:
        """A regular file's text (UTF-8, at most ``limit`` bytes)."""
        real = self.resolve(rel)
        if real == self.root or self._regular(real, rel) is None:
            raise NotFound(f"no file {self.shown(rel)}")
        return read_text(real, limit=limit, display=self.shown(rel))

    def write(self, rel: str, text: str, *, validate: Validator | None = None) -> Path:
        """Replace (or create) a file atomically; ``log/`` is refused (append-only)."""
        if not isinstance(text, str):
            raise ValidationError("file content must be text")
        if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
            raise ValidationError(f"file is too large (limit {MAX_FILE_BYTES} bytes)")
        if "\x00" in text:
            raise ValidationError("file content contains a NUL byte")
        real = self.resolve(rel)
        if real == self.root:
            raise ValidationError(f"not a file: {self.shown(rel)}")
        parts = self.parts(real)
        if parts[0] == LOG_DIR:
            raise ValidationError(
                f"{self.shown(rel)}: the goal log is append-only (use goal_log_append)"
            )
        self._regular(real, rel)
        parent = real.parent
        if parent.exists() and not parent.is_dir():
            raise ValidationError(f"{self.shown(rel)}: its folder is a file")
        if validate is not None:
            validate(parts, text, self.shown(rel))
        atomic_write(real, text)
        return real

    def append_log(self, text: str, when: datetime | None = None) -> tuple[Path, int]:
        """Append one entry to ``log/YYYY-MM-DD.md``; returns the file and its line."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("a log entry needs text")
        if len(text) > 20_000:
            raise ValidationError("a log entry is too long (20000 characters at most)")
        when = (when or datetime.now(UTC)).astimezone(UTC)
        real = self.resolve(f"{LOG_DIR}/{when:%Y-%m-%d}.md")
        self._regular(real, f"{LOG_DIR}/{when:%Y-%m-%d}.md")
        lines = text.replace("\x00", "").rstrip().splitlines()
        entry = f"- {when:%H:%M:%SZ} {lines[0]}".rstrip()
        if len(lines) > 1:
            entry += "\n" + "\n".join(f"  {line}".rstrip() for line in lines[1:])
        before = 0
        if real.exists():
            with real.open("rb") as fh:
                before = sum(1 for _ in fh)
        append_line(real, entry)
        return real, before + 1


def goal_tree(kb_root: Path, goal_id: str) -> ConfinedTree:
    """The files of goal ``goal_id`` of the KB at ``kb_root`` (see :func:`goal_dir`)."""
    return ConfinedTree(goal_dir(kb_root, goal_id), goal_id)
