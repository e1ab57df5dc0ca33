"""Threads (conversations) and their messages; every worker's home thread.

A worker's home thread is the thread its turns run in (their todos and posts land
there). It is created with the worker (:func:`ensure_home_threads`, called by the KB
index) and found again by its ``goal_id`` and ``worker`` columns; a database older than
home threads gets them at its next KB sync, or at a worker run's first tool session
(:func:`home_thread`). It outlives the worker, so a worker added again finds its
checklist.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import Session, col, select

from goalsui.domain.intent_spec import MAX_TITLE
from goalsui.domain.states import ChangeTopic
from goalsui.errors import ValidationError
from goalsui.service.context import ServiceContext
from goalsui.store.models import Goal, Message, Thread


def create_thread(ctx: ServiceContext, title: str, *, private: bool = False) -> Thread:
    """A new thread; a private one refuses intents and follow-ups."""
    title = " ".join(str(title).split())
    if not title:
        raise ValidationError("a thread needs a title")
    if len(title) > MAX_TITLE:
        raise ValidationError(f"thread title is too long ({MAX_TITLE} characters at most)")
    with ctx.store.write() as s:
        thread = Thread(title=title, private=private, created_at=ctx.now())
        s.add(thread)
        s.flush()
    ctx.journal("thread created", f"thread {thread.id}", title)
    ctx.changed(ChangeTopic.THREADS)
    return thread


def list_threads(ctx: ServiceContext) -> list[Thread]:
    """Every thread, oldest first."""
    with ctx.store.read() as s:
        return list(s.exec(select(Thread).order_by(col(Thread.id))))


def get_thread(ctx: ServiceContext, thread_id: int) -> Thread:
    """One thread, or :class:`NotFound`."""
    return ctx.get(Thread, thread_id, "thread")


def find_thread(ctx: ServiceContext, title: str) -> Thread | None:
    """The first thread with exactly this title."""
    with ctx.store.read() as s:
        return s.exec(select(Thread).where(Thread.title == title)).first()


def messages(
    ctx: ServiceContext,
    thread_id: int | None = None,
    *,
    goal_id: str | None = None,
    limit: int = 200,
) -> list[Message]:
    """The newest ``limit`` messages of a thread or goal, oldest first."""
    with ctx.store.read() as s:
        q = select(Message)
        if thread_id is not None:
            q = q.where(Message.thread_id == thread_id)
        if goal_id is not None:
            q = q.where(Message.goal_id == goal_id)
        rows = s.exec(q.order_by(col(Message.id).desc()).limit(limit)).all()
    return list(reversed(rows))


def post_message(
    ctx: ServiceContext,
    content: str,
    *,
    thread_id: int | None = None,
    goal_id: str | None = None,
    role: str = "user",
    intent_id: int | None = None,
    run_id: int | None = None,
    provenance: str | None = None,
) -> Message:
    """Post to a thread (or a goal); ``provenance`` says why it appeared."""
    if thread_id is not None:
        get_thread(ctx, thread_id)
    with ctx.store.write() as s:
        message = Message(
            thread_id=thread_id,
            goal_id=goal_id,
            role=role,
            content=content,
            intent_id=intent_id,
            run_id=run_id,
            provenance=provenance,
            created_at=ctx.now(),
        )
        s.add(message)
        s.flush()
    ctx.changed(ChangeTopic.MESSAGES)
    return message


def home_title(goal_name: str, worker: str) -> str:
    """``<goal name> / <worker>``, cut to a thread title's limit."""
    title = " ".join(f"{goal_name} / {worker}".split())
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"


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
    """Inside a write transaction serialised as ``kb-sync``: the home thread of each
    worker, created when missing and retitled when the goal was renamed; and whether
    any was written. ``found``: the goal's home threads already read (by worker)."""
    names = list(workers)
    if found is None:
        found = home_threads(s, [goal_id]).get(goal_id, {}) if names else {}
    out = []
    written = False
    for name in names:
        thread = found.get(name)
        title = home_title(goal_name, name)
        if thread is None:
            thread = Thread(title=title, goal_id=goal_id, worker=name, created_at=now)
            s.add(thread)
            written = True
        elif thread.title != title:
            thread.title = title
            s.add(thread)
            written = True
        out.append(thread)
    return out, written


def find_home_thread(ctx: ServiceContext, goal_id: str, worker: str) -> Thread | None:
    """A worker's home thread, None when it was not created yet."""
    with ctx.store.read() as s:
        return s.exec(
            select(Thread).where(Thread.goal_id == goal_id, Thread.worker == worker)
        ).first()


def home_thread(ctx: ServiceContext, goal_id: str, worker: str) -> Thread:
    """A worker's home thread, created now if the KB index has not made it yet."""
    thread = find_home_thread(ctx, goal_id, worker)
    if thread is not None:
        return thread
    with ctx.store.read() as s:
        goal = s.get(Goal, goal_id)
    name = goal.name if goal is not None else goal_id
    with ctx.store.write() as s:
        ctx.store.serialize(s, "kb-sync")  # the KB index creates them under the same lock
        (thread,), _ = ensure_home_threads(s, goal_id, name, [worker], ctx.now())
        s.flush()
    ctx.changed(ChangeTopic.THREADS)
    return thread
