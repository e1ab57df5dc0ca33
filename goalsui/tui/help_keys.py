"""The help screen's contents: the keys active now, every key each main-screen pane
accepts, and the symbols the panes draw.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
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


def help_groups(app: App[Any], *, every_pane: bool) -> list[tuple[str, list[tuple[str, str]]]]:
    """This pane / global / navigation, from the bindings active now.

    ``every_pane`` (the main screen): every pane's keys and every symbol, too.
    """
    pane: list[tuple[str, str]] = []
    global_: list[tuple[str, str]] = []
    nav: list[tuple[str, str]] = []
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
    for (group, description), displays in rows.items():
        target = {"This pane": pane, "Global": global_, "Navigation": nav}[group]
        target.append((", ".join(displays), description))
    groups = [("This pane", pane), ("Global", global_), ("Navigation", nav)]
    if every_pane:
        groups += [*pane_sections(app), legend_section()]
    return groups
