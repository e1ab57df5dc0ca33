"""The one service API (:class:`Service` in ``api.py``) of the console, the CLI and the tool server.

``Service`` loads on first use (PEP 562), so that light modules of this package
(``quick``, ``quick_plan``, ``index_stamp``) import without the database stack."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goalsui.service.api import Service

__all__ = ["Service"]


def __getattr__(name: str) -> Any:
    if name != "Service":
        raise AttributeError(f"module 'goalsui.service' has no attribute {name!r}")
    from goalsui.service.api import Service

    return Service
