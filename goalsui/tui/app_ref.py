"""The console's app, typed: Textual types ``widget.app`` as ``App[Any]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.dom import DOMNode

if TYPE_CHECKING:
    from goalsui.tui.app import GoalsApp

__all__ = ["goals_app"]


def goals_app(node: DOMNode) -> GoalsApp:
    """``node.app``: every screen and widget of the console runs inside a ``GoalsApp``."""
    return cast("GoalsApp", node.app)
