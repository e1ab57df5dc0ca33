"""The help screen's contents: the keys active now, every main-screen pane's keys, and the
symbols the panes draw."""

from __future__ import annotations

from typing import Any

from textual.app import App

from goalsui.tui import keys
from goalsui.tui.fmt import INTENT_GLYPH, RUN_GLYPH

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


def pane_sections(app: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """One section per pane, read-only consoles without actions."""
    sections = []
    for title, safe, actions in keys.PANE_KEYS:
        rows: dict[str, list[str]] = {}
        for binding in [*safe, *([] if app.read_only else actions)]:
            if binding.description:
                shown = rows.setdefault(binding.description, [])
                key = app.get_key_display(binding)
                if key not in shown:
                    shown.append(key)
        sections.append((title, [(", ".join(k), d) for d, k in rows.items()]))
    return sections


def help_groups(app: App[Any], *, every_pane: bool) -> list[tuple[str, list[tuple[str, str]]]]:
    """This pane / global / navigation, from the bindings active now; ``every_pane`` (the
    main screen): every pane's keys and every symbol, too."""
    screen = app.screen
    rows: dict[tuple[str, str], list[str]] = {}  # (group, description) -> keys
    for _key, active in screen.active_bindings.items():
        binding, node = active.binding, active.node
        if not binding.description or binding.system:
            continue
        if binding.id is None and node in (app, screen):
            continue  # Textual's own screen/app keys (copy text, ...)
        bid = binding.id or ""
        if bid.startswith(("nav.", "pane.")) or binding.action.startswith(
            ("cursor_", "scroll_", "page_", "app.focus")
        ):
            group = "Navigation"
        elif node is app or node is screen:
            group = "Global"
        else:
            group = "This pane"
        keys_for = rows.setdefault((group, binding.description), [])
        shown = app.get_key_display(binding)
        if shown not in keys_for:
            keys_for.append(shown)
    groups = [
        (name, [(", ".join(found), what) for (group, what), found in rows.items() if group == name])
        for name in ("This pane", "Global", "Navigation")
    ]
    if every_pane:
        groups += [*pane_sections(app), ("Symbols", legend())]
    return groups
