"""The console's footer: Textual's, with help, quit and back first on narrow terminals, and
rebuilt once per batch of binding changes (a start changes them several times before the
first frame, and each rebuild mounts and styles every key again)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer as TextualFooter

#: Keys a narrow footer shows first, so they are never cut off: help, quit, back.
ESSENTIAL_ACTIONS = frozenset({"help", "app.help", "quit", "app.quit", "back"})
#: Below this width the footer puts the essential keys first.
NARROW = 120


class Footer(TextualFooter):
    """A footer that rebuilds its keys once per batch of binding changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._changes = 0
        self._built_for = 0

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._changes += 1
        super().bindings_changed(screen)

    def compose(self) -> Iterable[Widget]:  # a plain list of keys (no binding groups)
        keys = list(super().compose())
        if self.app.size.width >= NARROW:
            return keys
        first = [k for k in keys if getattr(k, "action", None) in ESSENTIAL_ACTIONS]
        return first + [k for k in keys if k not in first]

    async def recompose(self) -> None:
        if self._built_for == self._changes:
            return  # a rebuild queued earlier in this batch showed these bindings already
        self._built_for = self._changes
        await super().recompose()
