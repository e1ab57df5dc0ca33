"""Below 120 columns the main screen shows fewer panes at a time, chosen with tabs (the
screen's classes ``-narrow`` and ``-tab-<name>`` hide the others; see app.tcss)."""

from __future__ import annotations

#: Below this width the main screen uses tabs.
NARROW_WIDTH = 120
#: Each tab and the panes it shows (Detail shows on every tab).
TAB_PANES: dict[str, tuple[str, ...]] = {
    "goals": ("goals", "detail"),
    "runs": ("timeline", "failed", "detail"),
    "threads": ("threads", "detail"),
}
TAB_LABELS = {"goals": "Goals", "runs": "Runs", "threads": "Threads"}


def tab_of(pane: str, current: str) -> str:
    """The tab to show for ``pane`` (the current one when it shows the pane already)."""
    if pane in TAB_PANES.get(current, ()):
        return current
    return next(name for name, panes in TAB_PANES.items() if pane in panes)
