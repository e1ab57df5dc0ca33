"""Screens of the console."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen


def named_screen(name: str, *, read_only: bool) -> Screen[Any]:
    """A new screen that a key opens over the main screen (``F``, ``M``, ``E``, ``T``, ``L``, ``U``)."""
    from goalsui.tui.screens.failures import FailuresScreen
    from goalsui.tui.screens.records import EventsScreen, JournalScreen, ThreadsScreen
    from goalsui.tui.screens.reports import ReportsScreen
    from goalsui.tui.screens.runs import RunsScreen

    screens: dict[str, Any] = {
        "failures": lambda: FailuresScreen(read_only=read_only),
        "reports": ReportsScreen,
        "events": EventsScreen,
        "threads": lambda: ThreadsScreen(read_only=read_only),
        "journal": JournalScreen,
        "runs": lambda: RunsScreen(read_only=read_only),
    }
    screen: Screen[Any] = screens[name]()
    return screen
