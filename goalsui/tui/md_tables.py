"""Markdown tables that fit the pane they are shown in.

Textual's Markdown table shrinks every column of a table wider than its pane until the
cells read ``wo…``, ``20…``. A report's timeline (eight columns, file paths in the last)
is such a table in any pane narrower than about 130 cells. :func:`fit_tables` rewrites
each table too wide for ``width`` as a list, one item per row, every cell labelled with
its header; tables that fit, and everything else, are left as they are. The file on
disk keeps its table: this only changes what the pane renders.
"""

from __future__ import annotations

import re

__all__ = ["fit_tables", "table_width"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^(\s*(?:>\s?)*)")
_DIVIDER_CELL = re.compile(r"^:?-{3,}:?$")
_PIPE = re.compile(r"(?<!\\)\|")
_EMPTY = {"", "-", "–", "—"}  # cells that say nothing are left out of a row's item


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip() for cell in _PIPE.split(body)]


def _is_divider(line: str) -> bool:
    cells = _cells(line)
    return bool(cells) and all(_DIVIDER_CELL.match(cell) for cell in cells)


def table_width(header: list[str], rows: list[list[str]]) -> int:
    """Cells a table takes rendered in full: the widest cell of each column, one cell of
    padding either side and a rule between columns."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row[: len(widths)]):
            widths[i] = max(widths[i], len(cell))
    return sum(widths) + 3 * len(widths) + 1


def _as_list(prefix: str, header: list[str], rows: list[list[str]]) -> list[str]:
    out = []
    for row in rows:
        cells = [*row, *[""] * (len(header) - len(row))][: len(header)]
        head = f"**{cells[0]}**" if cells[0] else "**-**"
        rest = [
            f"{name} {cell}" if name else cell
            for name, cell in zip(header[1:], cells[1:], strict=True)
            if cell not in _EMPTY
        ]
        out.append(f"{prefix}- {head}: " + " · ".join(rest) if rest else f"{prefix}- {head}")
    return out


def fit_tables(markdown: str, width: int) -> str:
    """``markdown`` with every table wider than ``width`` cells rewritten as a list.

    A table is a header row, a divider row (``| --- | ---: |``) and its body rows, all
    with the same blockquote prefix; tables inside fenced code blocks are left alone.
    """
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)
            fence = None if fence == marker else (fence or marker)
            out.append(line)
            i += 1
            continue
        prefix = _QUOTE.match(line).group(1)  # type: ignore[union-attr]
        body = line[len(prefix) :]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            fence is None
            and "|" in body
            and nxt.startswith(prefix)
            and "|" in nxt
            and _is_divider(nxt[len(prefix) :])
        ):
            header = _cells(body)
            j = i + 2
            rows: list[list[str]] = []
            while j < len(lines) and lines[j].startswith(prefix):
                row = lines[j][len(prefix) :]
                if "|" not in row or not row.strip():
                    break
                rows.append(_cells(row))
                j += 1
            if table_width(header, rows) > width:
                out.extend(_as_list(prefix, header, rows))
            else:
                out.extend(lines[i:j])
            i = j
            continue
        out.append(line)
        i += 1
    return "\n".join(out)
