"""Markdown checklists: the items of a thread/heartbeat checklist and whether it says anything."""

from __future__ import annotations

import re

_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\](?:\s+(.*?))?\s*$")
_STUB = re.compile(r"^\s*[-*+](?:\s+\[[ xX]\])?\s*$")  # "- [ ]", "- [x]", a bare "-"
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s.*)?$")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def parse_markdown_checklist(text: str | None) -> list[tuple[str, bool]]:
    """``(text, done)`` for each ``- [ ] text`` / ``- [x] text`` / ``* [X] text`` line.

    Item text is stripped; lines without a checkbox and boxes without text are ignored.
    """
    items: list[tuple[str, bool]] = []
    for line in (text or "").splitlines():
        match = _ITEM.match(line)
        if match and match.group(2):
            items.append((match.group(2).strip(), match.group(1) in "xX"))
    return items


def checklist_is_empty(text: str | None) -> bool:
    """True when ``text`` holds nothing to act on.

    Empty means only blank lines, Markdown headings, ``<!-- comments -->`` and empty
    checkbox stubs (``- [ ]`` with no text after the box). None and "" are empty.
    """
    if not text:
        return True
    body = _COMMENT.sub("", text)
    for line in body.splitlines():
        if not line.strip() or _HEADING.match(line) or _STUB.match(line):
            continue
        return False
    return True
