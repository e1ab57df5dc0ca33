"""Below 120 columns the main screen shows fewer panes at a time, chosen with tabs.

The panes stay where they are (no re-mounting, selections and cursors survive); the
screen's CSS classes ``-narrow`` and ``-tab-<name>`` hide the others (see app.tcss).
"""

from __future__ import annotations

from textual.widgets import Tab, Tabs

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


class PaneTabs(Tabs):
    """The tab bar of the narrow layout (not in the focus chain: 1-5 and the mouse)."""

    can_focus = False

    DEFAULT_CSS = """
    PaneTabs { display: none; height: 1; }
    PaneTabs Underline { display: none; }
    PaneTabs #tabs-list { min-height: 1; }
    PaneTabs Tab { height: 1; padding: 0 2; }
    PaneTabs Tab.-active { background: $primary; color: $text; text-style: bold; }
    """

    def __init__(self) -> None:
        super().__init__(
            *(Tab(label, id=f"tab-{name}") for name, label in TAB_LABELS.items()),
            id="pane-tabs",
        )

    def counts(self, *, failures: int, open_todos: int) -> None:
        """What waits behind the hidden tabs: failed runs, open todos."""
        labels = {
            "runs": "Runs · " + (f"✗ {failures} failed" if failures else "none failed"),
            "threads": f"Threads · {open_todos} open",
        }
        for name, label in labels.items():
            tab = self.query_one(f"#tab-{name}", Tab)
            if str(tab.label) != label:
                tab.label = label
