"""A quick read of the goal folders for the console's first frame: plain scalars of each
``definition.yaml``, no validation, into the service's own views."""

from __future__ import annotations

import os
import re
from pathlib import Path

from goalsui.domain.views import GoalView, WorkerView
from goalsui.errors import GoalsuiError
from goalsui.kb.regular import open_regular

DEFINITION = "definition.yaml"
#: Reading stops after this many bytes of a definition file (the fields sit at the top).
HEAD_BYTES = 16 * 1024
_TOP_LEVEL = re.compile(r"^(name|status|sort_order):(?:[ \t]+(.*))?$")
_PLAIN_START = set("'\"[]{}&*!|>%@`#,?-:")


def _scalar(raw: str | None) -> tuple[bool, str]:
    """``(True, value)`` for a plain or simply quoted one-line scalar, else ``(False, "")``."""
    value = (raw or "").strip()
    if not value:
        return False, ""
    quote, inner = value[0], value[1:-1]
    if quote in "\"'":  # a double-quoted scalar with an escape needs the real parser
        simple = len(value) > 1 and value.endswith(quote) and quote not in inner
        return (True, inner) if simple and (quote == "'" or "\\" not in inner) else (False, "")
    if value[0] in _PLAIN_START or ": " in value or " #" in value or value.endswith(":"):
        return False, ""
    return True, value


def _fields(text: str) -> dict[str, str] | None:
    """The top-level fields; None when a value needs a real YAML parse."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _TOP_LEVEL.match(line)
        if match is None:
            continue
        ok, value = _scalar(match.group(2))
        if not ok:
            return None
        found[match.group(1)] = value
    return found


def _parsed(text: str) -> dict[str, str]:
    """The fields by a full parse, with the KB's strict YAML rules (no aliases)."""
    from goalsui.kb.yamlio import parse_yaml

    try:
        data = parse_yaml(text, DEFINITION)
    except GoalsuiError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: str(data[k]) for k in ("name", "status", "sort_order") if data.get(k) is not None}


def defined_folder(entry: os.DirEntry[str]) -> bool:
    """A folder of a goal or a worker: not hidden, not a link, with its definition."""
    return (
        not entry.name.startswith(".")
        and entry.is_dir(follow_symlinks=False)
        and os.path.exists(os.path.join(entry.path, DEFINITION))
    )


def read_goal(path: Path) -> GoalView:
    """One goal folder: its name, status and order, and its workers' names."""
    goal = GoalView(goal_id=path.name, name=path.name, path=str(path))
    try:
        fd = open_regular(path / DEFINITION)  # a FIFO here must not stall the first frame
    except GoalsuiError:
        text = ""
    else:
        with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
            text = fh.read(HEAD_BYTES)
    found = _fields(text)
    if found is None:
        found = _parsed(text)
    goal.name = found.get("name") or path.name
    goal.status = found.get("status") or "active"
    try:
        goal.sort_order = int(found.get("sort_order", "0"))
    except ValueError:
        goal.sort_order = 0
    try:
        entries = sorted(os.scandir(path / "workers"), key=lambda e: e.name)
    except OSError:
        entries = []
    goal.workers = [WorkerView(entry.name) for entry in entries if defined_folder(entry)]
    return goal


def read_goals(root: Path) -> list[GoalView]:
    """Every goal folder of the KB at ``root``, in the console's order."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    goals = [read_goal(Path(entry.path)) for entry in entries if defined_folder(entry)]
    return sorted(goals, key=lambda g: (g.sort_order, g.name))
