"""Threads (``service.threads``) and their messages; a user's message starts its reply,
an ordinary one-shot intent keyed by the message (the one intent a private thread takes)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import col, select

from goalsui.domain.intent_spec import MAX_TITLE, IntentSpec
from goalsui.domain.records import IntentRecord, MessageRecord, ThreadRecord, saved_id
from goalsui.domain.replies import is_reply, reply_key, reply_title
from goalsui.domain.states import ChangeTopic, IntentKind, IntentStatus, RunStatus
from goalsui.domain.text import one_line
from goalsui.errors import ValidationError
from goalsui.kb.config import NO_RUNNER
from goalsui.service.context import ServiceContext
from goalsui.service.homes import ensure_home_threads
from goalsui.service.intents import Intents
from goalsui.service.runs import Runs
from goalsui.store.models import Goal, Intent, IntentRun, Message, Thread

MAX_MESSAGE = 20_000


@dataclass(frozen=True)
class Said:
    """A posted user message and the reply intent it started (None with ``reply=False``)."""

    message: Message
    intent: Intent | None


@dataclass(frozen=True)
class ReplyResult:
    """How a reply ended: the reply message (None when silent or failed) and its runs."""

    status: str  # ok | silent | failed | cancelled
    reply: MessageRecord | None
    runs: list[IntentRun]
    reason: str | None = None


class Threads:
    """Threads, their messages, and the conversations held in them."""

    def __init__(self, ctx: ServiceContext, intents: Intents, runs: Runs) -> None:
        self.ctx = ctx
        self.intents = intents
        self.runs = runs

    def create(self, title: str, *, private: bool = False) -> Thread:
        """A new thread; a private one refuses intents and follow-ups."""
        too_long = f"thread title is too long ({MAX_TITLE} characters at most)"
        title = one_line(title, MAX_TITLE, empty="a thread needs a title", too_long=too_long)
        with self.ctx.store.write() as s:
            thread = Thread(title=title, private=private, created_at=self.ctx.now())
            s.add(thread)
            s.flush()
        self.ctx.done(ChangeTopic.THREADS, "thread created", f"thread {thread.id}", title)
        return thread

    def get(self, thread_id: int) -> Thread:
        """One thread, or :class:`NotFound`."""
        return self.ctx.get(Thread, thread_id, "thread")

    def find(self, title: str) -> Thread | None:
        """The first thread with exactly this title."""
        with self.ctx.store.read() as s:
            return s.exec(select(Thread).where(Thread.title == title)).first()

    def messages(
        self, thread_id: int | None = None, *, goal_id: str | None = None, limit: int = 200
    ) -> list[MessageRecord]:
        """The newest ``limit`` messages of a thread or goal, oldest first."""
        with self.ctx.store.read() as s:
            q = select(Message)
            if thread_id is not None:
                q = q.where(Message.thread_id == thread_id)
            if goal_id is not None:
                q = q.where(Message.goal_id == goal_id)
            rows = s.exec(q.order_by(col(Message.id).desc()).limit(limit)).all()
        return [m.record() for m in reversed(rows)]

    def post(
        self,
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
            self.get(thread_id)
        with self.ctx.store.write() as s:
            message = Message(
                thread_id=thread_id,
                goal_id=goal_id,
                role=role,
                content=content,
                intent_id=intent_id,
                run_id=run_id,
                provenance=provenance,
                created_at=self.ctx.now(),
            )
            s.add(message)
            s.flush()
        self.ctx.changed(ChangeTopic.MESSAGES)
        return message

    def home(self, goal_id: str, worker: str) -> Thread:
        """A worker's home thread, created now if the KB index has not made it yet."""
        with self.ctx.store.read() as s:
            where = (Thread.goal_id == goal_id, Thread.worker == worker)
            thread = s.exec(select(Thread).where(*where)).first()
            goal = s.get(Goal, goal_id)
        if thread is not None:
            return thread
        name = goal.name if goal is not None else goal_id
        with self.ctx.store.write() as s:
            self.ctx.store.serialize(s, "kb-sync")  # the KB index creates them under this lock
            (thread,), _ = ensure_home_threads(s, goal_id, name, [worker], self.ctx.now())
            s.flush()
        self.ctx.changed(ChangeTopic.THREADS)
        return thread

    def say(self, thread_id: int, text: str, *, reply: bool = True) -> Said:
        """Post ``text`` as the user; with ``reply``, start the reply turn now (nothing is
        posted without a default runner)."""
        if not text.strip():
            raise ValidationError("the message is empty")
        if len(text) > MAX_MESSAGE:
            raise ValidationError(f"the message is too long ({MAX_MESSAGE} characters at most)")
        self.get(thread_id)
        if reply and self.ctx.config().runner is None:
            raise ValidationError(NO_RUNNER)  # refused before anything is posted
        message = self.post(text, thread_id=thread_id, role="user")
        intent = self.create_reply(thread_id, saved_id(message), text) if reply else None
        return Said(message, intent)

    def create_reply(self, thread_id: int, message_id: int, text: str) -> Intent:
        """The reply intent to message ``message_id``: ``at`` now, on the thread, keyed by it."""
        spec = IntentSpec(
            title=reply_title(text),
            instruction=text,
            kind=IntentKind.AT,
            schedule=self.ctx.now().isoformat(),
            timezone="UTC",
            thread_id=thread_id,
            operation_key=reply_key(message_id),
        )
        return self.intents.save(spec, reply=True)

    def reply_state(self, intent_id: int) -> ReplyResult | None:
        """The reply's outcome once it is decided (None while it may still run or retry)."""
        intent = self.intents.get(intent_id)
        runs = list(reversed(self.runs.list(intent_id=intent_id, limit=50)))
        done = [r for r in runs if r.status in (RunStatus.OK, RunStatus.SILENT)]
        if done:
            replies = [
                m
                for m in self.messages(intent.thread_id, limit=50)
                if m.intent_id == intent_id and m.role == "assistant"
            ]
            return ReplyResult(done[-1].status, replies[-1] if replies else None, runs)
        if intent.status in (IntentStatus.FAILED, IntentStatus.CANCELLED, IntentStatus.DONE):
            reason = intent.last_error or (runs[-1].reason if runs else None)
            status = "cancelled" if intent.status == IntentStatus.CANCELLED else "failed"
            return ReplyResult(status, None, runs, reason)
        return None

    def pending_replies(self, thread_id: int) -> list[IntentRecord]:
        """The thread's replies still due, running or waiting to retry."""
        return [
            i.record()
            for i in self.intents.list(thread_id=thread_id, include_ended=False)
            if is_reply(i.operation_key) and i.status in (IntentStatus.ACTIVE, IntentStatus.FIRING)
        ]

    def cancel_replies(self, thread_id: int) -> list[int]:
        """Cancel the thread's pending replies (a running one's process is stopped)."""
        cancelled = [saved_id(intent) for intent in self.pending_replies(thread_id)]
        for intent_id in cancelled:
            self.intents.cancel(intent_id)
        return cancelled

    def list(self) -> list[ThreadRecord]:
        """Every thread, oldest first."""
        with self.ctx.store.read() as s:
            return [t.record() for t in s.exec(select(Thread).order_by(col(Thread.id)))]
