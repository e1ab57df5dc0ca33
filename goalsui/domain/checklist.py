"""Markdown checklists: the items of a thread/heartbeat checklist and whether it says anything."""

from __future__ import annotations

import re

_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\](?:\s+(.*?))?\s*$")
_STUB = re.compile(r"^\s*[-*+](?:\s+\[[ xX]\])?\s*$")  # "- [ ]", "- [x]", a bare "-"
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s.*)?$")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def parse_markdown_checklist(text: str | None) -> list[tuple[str, bool]]:
    """``(text, done)`` for each ``- [ ] text`` / ``* [X] text`` line with text."""
    matches = [_ITEM.match(line) for line in (text or "").splitlines()]
    return [(m.group(2).strip(), m.group(1) in "xX") for m in matches if m and m.group(2)]


def checklist_is_empty(text: str | None) -> bool:
    """True when ``text`` has only blank lines, headings, ``<!-- comments -->`` and empty
    ``- [ ]`` stubs (None and "" too)."""
    lines = _COMMENT.sub("", text or "").splitlines()
    return all(not line.strip() or _HEADING.match(line) or _STUB.match(line) for line in lines)
