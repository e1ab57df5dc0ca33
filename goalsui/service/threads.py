"""Threads (conversations) and their messages."""

from __future__ import annotations

from sqlmodel import col, select

from goalsui.domain.intent_spec import MAX_TITLE
from goalsui.domain.models import Message, Thread
from goalsui.domain.states import ChangeTopic
from goalsui.errors import NotFound, ValidationError
from goalsui.service.context import ServiceContext


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
    with ctx.store.read() as s:
        thread = s.get(Thread, thread_id)
    if thread is None:
        raise NotFound(f"no thread {thread_id}")
    return thread


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
