"""The journal (``service.journal``): who did what, when; :func:`acting` marks a tool
call's writes with its run and tool."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from sqlmodel import col, select

from goalsui.domain.records import JournalRecord, record_of
from goalsui.store.db import Store
from goalsui.store.models import Journal as Entry

_ACTING: contextvars.ContextVar[tuple[int | None, str | None]] = contextvars.ContextVar(
    "goalsui_acting", default=(None, None)
)


@contextlib.contextmanager
def acting(run_id: int | None, tool: str | None) -> Iterator[None]:
    """Journal entries written inside are marked with ``run_id`` and ``tool``."""
    token = _ACTING.set((run_id, tool))
    try:
        yield
    finally:
        _ACTING.reset(token)


class Journal:
    """The journal of one service: entries are written by its ``actor`` unless told."""

    def __init__(self, store: Store, actor: str) -> None:
        self.store = store
        self.actor = actor

    def record(
        self,
        action: str,
        subject: str = "",
        detail: str = "",
        actor: str | None = None,
        *,
        run_id: int | None = None,
        tool: str | None = None,
    ) -> None:
        """Append one entry in its own transaction (marked with :func:`acting`'s run and tool)."""
        if run_id is None and tool is None:
            run_id, tool = _ACTING.get()  # the tool call in progress, if any
        with self.store.write() as s:
            s.add(
                Entry(
                    actor=actor or self.actor,
                    action=action,
                    subject=subject,
                    detail=detail,
                    run_id=run_id,
                    tool=tool,
                )
            )

    def recent(self, limit: int = 200) -> list[JournalRecord]:
        """The newest ``limit`` entries, newest first."""
        with self.store.read() as s:
            rows = s.exec(select(Entry).order_by(col(Entry.id).desc()).limit(limit))
            return [record_of(JournalRecord, e) for e in rows]
