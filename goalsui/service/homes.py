"""Every worker's home thread (its turns' todos and posts land there), found by ``goal_id``
and ``worker``; it outlives the worker, so a worker added again finds its checklist."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import Session, col, select

from goalsui.domain.intent_spec import MAX_TITLE
from goalsui.store.models import Thread


def home_threads(s: Session, goal_ids: Iterable[str] | None) -> dict[str, dict[str, Thread]]:
    """The home threads of ``goal_ids`` (None: of every goal), by goal, then worker."""
    q = select(Thread).where(col(Thread.goal_id).is_not(None))
    if goal_ids is not None:
        q = q.where(col(Thread.goal_id).in_(list(goal_ids)))
    out: dict[str, dict[str, Thread]] = {}
    for thread in s.exec(q).all():
        if thread.goal_id and thread.worker:
            out.setdefault(thread.goal_id, {})[thread.worker] = thread
    return out


def ensure_home_threads(
    s: Session,
    goal_id: str,
    goal_name: str,
    workers: Iterable[str],
    now: datetime,
    found: dict[str, Thread] | None = None,
) -> tuple[list[Thread], bool]:
    """Create missing and retitle renamed home threads (in a ``kb-sync`` write); True if any."""
    names = list(workers)
    if found is None:
        found = home_threads(s, [goal_id]).get(goal_id, {}) if names else {}
    out = []
    written = False
    for name in names:
        title = " ".join(f"{goal_name} / {name}".split())  # cut to a thread title's limit
        title = title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"
        thread = found.get(name) or Thread(
            title=title, goal_id=goal_id, worker=name, created_at=now
        )
        if thread.id is None or thread.title != title:  # new, or its goal was renamed
            thread.title = title
            s.add(thread)
            written = True
        out.append(thread)
    return out, written
