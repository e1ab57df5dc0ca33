"""Follow-ups an agent schedules, idempotent within the session's scope.

Keys are namespaced by scope with a digest of the payload: ``key:<scope>:<key>:<digest>``
(a named key; another payload is refused), ``fire:<intent>.<fire>:<sha256>`` (a run's
call; every attempt of one fire gets its follow-up back), ``op:<scope>:<digest>:<n>``
(an operator's call; a new one once the previous intent ended)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from sqlmodel import col, select

from goalsui.domain.states import IntentStatus
from goalsui.errors import Conflict, ValidationError
from goalsui.service.context import ServiceContext, found
from goalsui.service.intents import Intents
from goalsui.store.models import Intent, IntentRun

MAX_AGENT_KEY = 80
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$")
_ENDED = (IntentStatus.DONE, IntentStatus.CANCELLED, IntentStatus.FAILED)


def scope_name(thread_id: int | None, goal_id: str | None) -> str:
    """The namespace of a session's keys: its thread, else its goal."""
    if thread_id is not None:
        return f"thread:{thread_id}"
    if goal_id:
        return f"goal:{goal_id}"
    raise ValidationError("this session has no thread or goal to schedule into")


def payload_digest(spec: dict[str, Any], schedule_as_given: str | None) -> str:
    """sha256 of what a follow-up asks for (a relative instant as given, e.g. 'in:2h')."""
    content = json.dumps(
        [
            spec.get("kind"),
            schedule_as_given or "",
            spec.get("timezone") or "",
            spec.get("event_source") or "",
            " ".join(str(spec.get("title", "")).split()),
            spec.get("instruction", ""),
            spec.get("max_fires"),
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _with_prefix(ctx: ServiceContext, prefix: str) -> list[Intent]:
    with ctx.store.read() as s:
        q = select(Intent).where(col(Intent.operation_key).startswith(prefix, autoescape=True))
        return list(s.exec(q.order_by(col(Intent.id))))


def schedule_follow_up(
    ctx: ServiceContext,
    intents: Intents,
    run_id: int | None,
    *,
    key: str | None,
    schedule_as_given: str | None = None,
    **spec: Any,
) -> tuple[Intent, bool]:
    """Create the follow-up once per scoped key; returns (intent, created)."""
    scope = scope_name(spec.get("thread_id"), spec.get("goal_id"))
    given = schedule_as_given if schedule_as_given is not None else spec.get("schedule")
    digest = payload_digest(spec, given)
    if key is not None:
        key = key.strip()
        if not key or len(key) > MAX_AGENT_KEY or not _KEY.match(key):
            raise ValidationError(
                f"key must be 1-{MAX_AGENT_KEY} characters of letters, digits and ._:/@+- "
                "(starting with a letter or digit)"
            )
        prefix = f"key:{scope}:{key}:"
        for existing in _with_prefix(ctx, prefix):
            if existing.operation_key == prefix + digest[:32]:
                return existing, False
            raise Conflict(
                f"key {key!r} already scheduled another follow-up in this {scope.split(':')[0]} "
                f"(intent {existing.id}, {existing.title!r}): repeat that call exactly, or use "
                "a new key"
            )
        return intents.create(operation_key=prefix + digest[:32], **spec), True
    if run_id is not None:
        # a retry does not count a fire, so every attempt of one fire derives the same key
        with ctx.store.read() as s:
            intent_id = found(s.get(IntentRun, run_id), "run", run_id).intent_id
            intent = s.get(Intent, intent_id)
            fire = intent.fires if intent is not None else 0
        title = " ".join(str(spec.get("title", "")).split())
        rest = json.dumps(
            [spec.get("instruction", ""), spec.get("event_source"), spec.get("max_fires")]
        )
        content = [spec["kind"], given or "", spec.get("timezone") or "", title, rest]
        sha = hashlib.sha256(json.dumps(content, ensure_ascii=False).encode("utf-8")).hexdigest()
        derived = f"fire:{intent_id}.{fire}:{sha}"
        with ctx.store.read() as s:
            same = s.exec(select(Intent).where(Intent.operation_key == derived)).first()
        if same is not None:
            return same, False
        return intents.create(operation_key=derived, **spec), True
    prefix = f"op:{scope}:{digest[:32]}:"
    earlier = _with_prefix(ctx, prefix)
    live = [i for i in earlier if i.status not in _ENDED]
    if live:
        return live[-1], False
    return intents.create(operation_key=f"{prefix}{len(earlier) + 1}", **spec), True
