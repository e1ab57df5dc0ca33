"""The tab bar of the narrow layouts (the main screen's and the reports screen's)."""

from __future__ import annotations

from textual.widgets import Tab, Tabs


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
