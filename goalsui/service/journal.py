"""The journal: what the operator, the scheduler, the hooks and the tools did, with times."""

from __future__ import annotations

from sqlmodel import col, select

from goalsui.store.db import Store
from goalsui.store.models import Journal


def record(
    store: Store,
    actor: str,
    action: str,
    subject: str = "",
    detail: str = "",
    *,
    run_id: int | None = None,
    tool: str | None = None,
) -> None:
    """Append one entry (its own transaction)."""
    with store.write() as s:
        s.add(
            Journal(
                actor=actor, action=action, subject=subject, detail=detail, run_id=run_id, tool=tool
            )
        )


def recent(store: Store, limit: int = 200) -> list[Journal]:
    """The newest ``limit`` entries, newest first."""
    with store.read() as s:
        return list(s.exec(select(Journal).order_by(col(Journal.id).desc()).limit(limit)))
