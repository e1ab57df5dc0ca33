"""The console's footer: Textual's, rebuilt once however often the bindings changed.

Textual's footer answers every change of its screen's bindings by rebuilding its keys
after the next refresh. At start-up the bindings change several times before the first
frame (focus, the first records, the selection), and each rebuild mounts and styles every
key again. Here the rebuilds queued behind one refresh collapse into the first: it shows
the bindings as they are by then, so the others have nothing left to change.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter

__all__ = ["Footer"]


class Footer(TextualFooter):
    """A footer that rebuilds its keys once per batch of binding changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._changes = 0
        self._built_for = 0

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._changes += 1
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        if self._built_for == self._changes:
            return  # a rebuild queued earlier in this batch showed these bindings already
        self._built_for = self._changes
        await super().recompose()
