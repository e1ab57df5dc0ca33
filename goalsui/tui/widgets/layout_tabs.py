"""Below 120 columns the main screen shows fewer panes at a time, chosen with tabs (the
screen's classes ``-narrow`` and ``-tab-<name>`` hide the others; see app.tcss)."""

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


class TabBar(Tabs):
    """A one-line tab bar outside the focus chain (number keys and the mouse pick a tab);
    tab ids are ``tab-<name>``."""

    can_focus = False

    DEFAULT_CSS = """
    TabBar { display: none; height: 1; }
    TabBar Underline { display: none; }
    TabBar #tabs-list { min-height: 1; }
    TabBar Tab { height: 1; padding: 0 2; }
    TabBar Tab.-active { background: $primary; color: $text; text-style: bold; }
    """

    def __init__(self, labels: dict[str, str], active: str | None = None, *, id: str) -> None:
        self._by_name = {name: Tab(label, id=f"tab-{name}") for name, label in labels.items()}
        first = f"tab-{active}" if active else None
        super().__init__(*self._by_name.values(), active=first, id=id)

    def pick(self, name: str) -> None:
        """Make tab ``name`` active (until its tabs are mounted, the one it was built with is)."""
        if self.active != f"tab-{name}" and self.query(f"#tab-{name}"):
            self.active = f"tab-{name}"

    def label(self, name: str, text: str) -> None:
        tab = self._by_name[name]
        if str(tab.label) != text:
            tab.label = text

    @staticmethod
    def name_of(tab: Tab) -> str:
        return (tab.id or "").removeprefix("tab-")
