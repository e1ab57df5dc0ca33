"""Conversations: a user's message in a thread and the reply turn it starts.

The reply is an ordinary one-shot intent (``at`` now, on the thread, keyed by the
message), so the scheduler runs it like any other: retries, timeout, cancel, transcript.
A private thread accepts this reply and nothing else: every follow-up is refused by
:meth:`Service.create_intent`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from goalsui.domain.intent_spec import IntentSpec
from goalsui.domain.records import saved_id
from goalsui.domain.replies import is_reply, reply_key, reply_title
from goalsui.domain.states import IntentKind, IntentStatus, RunStatus
from goalsui.errors import ValidationError
from goalsui.kb.config import NO_RUNNER
from goalsui.service import intents
from goalsui.store.models import IntentRun, Message

if TYPE_CHECKING:
    from goalsui.service.facade import Service
    from goalsui.store.models import Intent

__all__ = [
    "ReplyResult",
    "Said",
    "cancel_replies",
    "create_reply",
    "pending_replies",
    "reply_state",
    "say",
]

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
    reply: Message | None
    runs: list[IntentRun]
    reason: str | None = None


def say(service: Service, thread_id: int, text: str, *, reply: bool = True) -> Said:
    """Post ``text`` as the user in a thread; with ``reply``, start the reply turn now.

    A reply needs the KB's default runner: without one, nothing is posted and the
    error says how to set it.
    """
    if not text.strip():
        raise ValidationError("the message is empty")
    if len(text) > MAX_MESSAGE:
        raise ValidationError(f"the message is too long ({MAX_MESSAGE} characters at most)")
    service.get_thread(thread_id)
    if reply and service.config().runner is None:
        raise ValidationError(NO_RUNNER)  # refused before anything is posted
    message = service.post_message(text, thread_id=thread_id, role="user")
    if not reply:
        return Said(message, None)
    intent = create_reply(service, thread_id, saved_id(message), text)
    return Said(message, intent)


def create_reply(service: Service, thread_id: int, message_id: int, text: str) -> Intent:
    """The reply intent to message ``message_id``: ``at`` now, on the thread, keyed by it."""
    spec = IntentSpec(
        title=reply_title(text),
        instruction=text,
        kind=IntentKind.AT,
        schedule=service.now().isoformat(),
        timezone="UTC",
        thread_id=thread_id,
        operation_key=reply_key(message_id),
    )
    return intents.create_intent(service, spec, reply=True)


def reply_state(service: Service, intent_id: int) -> ReplyResult | None:
    """The reply's outcome once it is decided (None while it may still run or retry)."""
    intent = service.get_intent(intent_id)
    runs = list(reversed(service.list_runs(intent_id=intent_id, limit=50)))
    done = [r for r in runs if r.status in (RunStatus.OK, RunStatus.SILENT)]
    if done:
        replies = [
            m
            for m in service.messages(intent.thread_id, limit=50)
            if m.intent_id == intent_id and m.role == "assistant"
        ]
        return ReplyResult(done[-1].status, replies[-1] if replies else None, runs)
    if intent.status in (IntentStatus.FAILED, IntentStatus.CANCELLED, IntentStatus.DONE):
        last = runs[-1] if runs else None
        reason = intent.last_error or (last.reason if last else None)
        status = "cancelled" if intent.status == IntentStatus.CANCELLED else "failed"
        return ReplyResult(status, None, runs, reason)
    return None


def pending_replies(service: Service, thread_id: int) -> list[Intent]:
    """The thread's replies still due, running or waiting to retry."""
    return [
        i
        for i in service.list_intents(thread_id=thread_id, include_ended=False)
        if is_reply(i.operation_key) and i.status in (IntentStatus.ACTIVE, IntentStatus.FIRING)
    ]


def cancel_replies(service: Service, thread_id: int) -> list[int]:
    """Cancel the thread's pending replies (a running one's process is stopped)."""
    cancelled: list[int] = []
    for intent in pending_replies(service, thread_id):
        intent_id = saved_id(intent)
        service.cancel_intent(intent_id)
        cancelled.append(intent_id)
    return cancelled
