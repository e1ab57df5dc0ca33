"""Markdown tables that fit their pane: Textual shrinks every column of a table wider than
its pane until the cells read ``wo…``, so :func:`fit_tables` rewrites such a table as a
list (the file keeps its table). Tables are found by Textual's own Markdown parser."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from rich.cells import cell_len

_PARSER = MarkdownIt("gfm-like")
_QUOTE = re.compile(r"^\s*(?:>\s?)*")
_EMPTY = {"", "-", "–", "—"}  # cells that say nothing are left out of a row's item


def _tables(markdown: str) -> list[tuple[int, int, list[list[str]]]]:
    """``(first line, end line, rows)`` of each table, the header row first."""
    found: list[tuple[int, int, list[list[str]]]] = []
    rows: list[list[str]] = []
    span: list[int] | None = None
    for token in _PARSER.parse(markdown):
        if token.type == "table_open":
            span, rows = token.map, []
        elif token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            rows[-1].append("")
        elif token.type == "inline" and span is not None:
            rows[-1][-1] = token.content.strip()
        elif token.type == "table_close" and span is not None:
            found.append((span[0], span[1], rows))
            span = None
    return found


def table_width(header: list[str], rows: list[list[str]]) -> int:
    """Cells a table takes rendered in full: the widest cell of each column (in terminal
    cells: a CJK character takes two), one cell of padding either side and a rule
    between columns."""
    widths = [cell_len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row[: len(widths)]):
            widths[i] = max(widths[i], cell_len(cell))
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
        out.append(f"{prefix}- {head}: {' · '.join(rest)}" if rest else f"{prefix}- {head}")
    return out


def fit_tables(markdown: str, width: int) -> str:
    """``markdown`` with every table wider than ``width`` cells rewritten as a list."""
    lines = markdown.split("\n")
    for start, end, (header, *rows) in reversed(_tables(markdown)):
        if table_width(header, rows) > width:
            quote = _QUOTE.match(lines[start])
            prefix = quote.group(0) if quote else ""
            lines[start:end] = _as_list(prefix, header, rows)
    return "\n".join(lines)
