"""The help screen's per-pane sections: every key each main-screen pane accepts."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding

from goalsui.tui import keys
from goalsui.tui.fmt import INTENT_GLYPH, RUN_GLYPH

#: Each pane of the main screen: its title and the bindings it accepts (safe, actions).
PANE_KEYS: list[tuple[str, list[Binding], list[Binding]]] = [
    ("Goals pane (1)", keys.GOALS_SAFE, keys.GOALS_ACTIONS),
    ("Threads pane (2)", keys.THREADS_SAFE, keys.THREADS_ACTIONS),
    ("Timeline pane (3)", keys.TIMELINE_SAFE, keys.TIMELINE_ACTIONS),
    ("Failed runs pane (4)", keys.FAILED_SAFE, keys.FAILED_ACTIONS),
    ("Detail pane (5)", keys.DETAIL_SAFE, keys.DETAIL_ACTIONS),
]

#: Symbols drawn by the panes beyond the run and intent glyphs.
_OTHER_SYMBOLS: list[tuple[str, str]] = [
    ("◆", "timeline: next planned fire"),
    ("▲", "timeline: overlap predicted (a fire while the last run may still run)"),
    ("┃", "timeline: now"),
    ("▸ ▾", "goals: collapsed / expanded"),
    ("☐ ☑", "threads: open / done todo"),
    ("⚠", "goals: KB error in the goal's files"),
    ("✉ new", "goals: a new file in the worker's outbox"),
    ("▁▂▃▄▅▆▇", "detail: recent runs' cost or duration; scrollbars"),
    ("…", "text clipped: Detail (5) or m (maximise) shows it whole"),
]


def legend() -> list[tuple[str, str]]:
    """Every symbol the panes use: run and intent glyphs (from fmt) and the rest."""
    meanings: dict[str, list[str]] = {}
    for status, glyph in RUN_GLYPH.items():
        meanings.setdefault(glyph, []).append(f"run {status}")
    for status, glyph in INTENT_GLYPH.items():
        meanings.setdefault(glyph, []).append(f"intent {status}")
    rows = [(glyph, ", ".join(what)) for glyph, what in meanings.items()]
    return rows + _OTHER_SYMBOLS


def pane_sections(app: Any, skip: str = "") -> list[tuple[str, list[tuple[str, str]]]]:
    """One section per pane (all of them but ``skip``), read-only consoles without actions."""
    sections = []
    for title, safe, actions in PANE_KEYS:
        if title == skip:
            continue
        rows: dict[str, list[str]] = {}
        for binding in [*safe, *([] if app.read_only else actions)]:
            if binding.description:
                shown = rows.setdefault(binding.description, [])
                key = app.get_key_display(binding)
                if key not in shown:
                    shown.append(key)
        sections.append((title, [(", ".join(k), d) for d, k in rows.items()]))
    return sections


def legend_section() -> tuple[str, list[tuple[str, str]]]:
    return ("Symbols", legend())
