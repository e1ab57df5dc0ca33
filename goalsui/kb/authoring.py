"""A new goal's templates (``$name`` placeholders: operator text is substituted once, never expanded
again) and the bound on a goal's state."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from string import Template

from goalsui.domain.agents import AGENTS
from goalsui.errors import KBError, ValidationError
from goalsui.kb.regular import read_text
from goalsui.kb.yamlio import parse_yaml

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATE_FILE = "state.yaml"
#: Folders of a goal tree whose YAML files are not the KB's own (results, history).
_NOT_VALIDATED = {"log", "reports", "inbox", "outbox"}
_MAX_YAML_FILES = 500  # per goal: a tree with more is reported, not walked forever
_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")


def agents_on_path(path: str | None = None) -> list[str]:
    """The preset agent CLIs whose binary is on ``PATH`` (or ``path``)."""
    return [name for name in AGENTS if shutil.which(name, path=path)]


def render_template(name: str, **values: str) -> str:
    """The bundled template ``name`` with ``$key`` placeholders filled from ``values``."""
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    return Template(text).safe_substitute(values)


def protocol_name(protocol: str, fallback: str) -> str:
    """The protocol's title: its first ``# heading``, else ``fallback``."""
    titles = (m.group(1) for line in protocol.splitlines() if (m := _HEADING.match(line)))
    return " ".join(next(titles, fallback).split())


def check_state_bytes(shown: str, new_bytes: int, limit: int) -> None:
    """Refuse a ``state.yaml`` of ``new_bytes`` bytes over ``limit`` (one clear line)."""
    if new_bytes > limit:
        raise ValidationError(
            f"{shown}: {new_bytes} bytes is over the state bound of {limit} bytes "
            "(state_max_bytes in goalsui.yaml): keep state.yaml small, move history to the log"
        )


def _yaml_files(goal_dir: Path) -> Iterator[Path]:
    """The goal's own YAML files (not logs, reports, mailboxes or hidden folders)."""
    for top, dirs, files in os.walk(goal_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _NOT_VALIDATED)
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                yield Path(top) / name


def yaml_problems(
    goal_dir: Path, goal_id: str, state_limit: int, *, skip: tuple[str, ...] = ()
) -> list[KBError]:
    """Files of a goal tree that do not parse (but ``skip``), and a bad ``state.yaml``."""
    problems: list[KBError] = []
    for count, path in enumerate(_yaml_files(goal_dir)):
        rel = path.relative_to(goal_dir)
        shown = f"{goal_id}/{rel.as_posix()}"
        if count >= _MAX_YAML_FILES:
            problems.append(
                KBError(goal_id, f"more than {_MAX_YAML_FILES} YAML files; rest unchecked")
            )
            break
        definition = path.name == "definition.yaml" and len(rel.parts) in (1, 3)
        if definition or (len(rel.parts) == 1 and rel.name in skip) or path.is_symlink():
            continue  # definitions are checked on load; links: the confined readers refuse them
        try:
            text = read_text(path, display=shown)
            data = parse_yaml(text, shown)
            if rel.as_posix() == STATE_FILE:
                if data is not None and not isinstance(data, dict):
                    raise KBError(
                        shown, "expected a mapping at the top (plan, decisions, baselines)", 1
                    )
                check_state_bytes(shown, len(text.encode("utf-8")), state_limit)
        except KBError as exc:
            problems.append(exc)
        except ValidationError as exc:
            problems.append(KBError(shown, str(exc).split(": ", 1)[-1]))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(KBError(shown, f"cannot read: {exc}"))
    return problems


def state_snapshot(goal_dir: Path, limit: int) -> bytes | None:
    """The goal's ``state.yaml`` before a turn (None if absent or already over ``limit``)."""
    path = goal_dir / STATE_FILE
    try:
        if path.is_symlink() or path.stat().st_size > limit:
            return None
        return path.read_bytes()
    except OSError:
        return None


def enforce_state_bound(
    goal_dir: Path, goal_id: str, before: bytes | None, limit: int
) -> str | None:
    """Put back a ``state.yaml`` a turn grew over ``limit``; the one-line reason, else None."""
    from goalsui.kb.atomic import atomic_write

    path = goal_dir / STATE_FILE
    try:
        size = path.stat().st_size
    except OSError:
        return None
    try:
        check_state_bytes(f"{goal_id}/{STATE_FILE}", size, limit)
    except ValidationError as exc:
        if before is not None and not path.is_symlink():
            atomic_write(path, before.decode("utf-8", errors="replace"))
            return f"{exc} (the write was refused: state.yaml is back as it was before the run)"
        return str(exc)
    return None
