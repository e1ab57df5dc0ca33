"""What agents do through goalsui (tool server and command line): confined KB verbs on
one goal tree, journaled writes and tool calls per run, idempotent follow-ups, transcripts."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import col, select

from goalsui.domain.redact import redact_argv
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.domain.transcript import TOOL_LINE, format_tool_call
from goalsui.domain.views import json_fields
from goalsui.errors import Conflict, GoalsuiError, NotFound, ValidationError
from goalsui.kb.atomic import append_line
from goalsui.service.context import ServiceContext, found
from goalsui.service.intents import Intents
from goalsui.service.kbindex import Index
from goalsui.service.runs import Runs
from goalsui.service.threads import Threads
from goalsui.store.models import Intent, IntentRun, Message, Thread, ToolCall

MAX_RESULT_CHARS = 8000
MAX_POST_CHARS = 64 * 1024
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


@dataclass(frozen=True)
class RunScope:
    """What a run may touch: its goal, worker, thread and the worker's capabilities."""

    goal_id: str | None
    worker: str | None
    thread_id: int | None
    private_thread: bool
    capabilities: tuple[str, ...] | None  # None: not a worker run


class Agents:
    """Service-level operations of the tool server and ``goalsui kb``."""

    def __init__(
        self, ctx: ServiceContext, intents: Intents, threads: Threads, runs: Runs, index: Index
    ) -> None:
        self.ctx = ctx
        self.intents = intents
        self.threads = threads
        self.runs = runs
        self.index = index

    def log_append(self, goal_id: str, text: str) -> tuple[Path, int]:
        """Append to the goal's log of today, journaled (the operator's appends are not)."""
        path, line = self.ctx.kb.tree(goal_id).append_log(text, self.ctx.now())
        self.ctx.done("files", "goal log appended", f"{goal_id}/log/{path.name}", f"line {line}")
        return path, line

    def live_run(self, run_id: int) -> IntentRun:
        """The run if it is still running; a finished or unknown run is refused."""
        run = self.runs.get(run_id)
        if run.status != RunStatus.RUNNING:
            raise ValidationError(
                f"run {run_id} is {run.status}, not running: its tools are closed"
            )
        return run

    def run_scope(self, run_id: int) -> RunScope:
        """A live run's scope; a thread intent in a worker's home thread is that worker's."""
        run = self.live_run(run_id)
        intent = self.intents.get(run.intent_id)
        goal_id, worker, thread_id = intent.goal_id, intent.worker, intent.thread_id
        thread: Thread | None = None
        if thread_id is not None:
            thread = self.threads.get(thread_id)
        elif goal_id and worker:
            thread = self.threads.home(goal_id, worker)
            thread_id = thread.id
        caps: tuple[str, ...] | None = None
        if goal_id and worker:
            caps = self._capabilities_or_none(goal_id, worker) or ()
        elif (
            thread is not None
            and thread.goal_id
            and thread.worker
            and goal_id in (None, thread.goal_id)
        ):
            caps = self._capabilities_or_none(thread.goal_id, thread.worker)
            if caps is not None:  # the worker still exists: the run is its
                goal_id, worker = thread.goal_id, thread.worker
        private = thread.private if thread is not None else False
        return RunScope(goal_id, worker, thread_id, private, caps)

    def _capabilities_or_none(self, goal_id: str, worker: str) -> tuple[str, ...] | None:
        """A worker's capabilities; None when its goal or worker is not (validly) in the KB."""
        try:
            return self.worker_capabilities(goal_id, worker)
        except GoalsuiError:
            return None

    def worker_capabilities(self, goal_id: str, worker: str) -> tuple[str, ...]:
        loaded = self.ctx.kb.load_goal(goal_id)
        wdef = loaded.workers.get(worker)
        if wdef is None:
            raise NotFound(f"goal '{goal_id}' has no valid worker '{worker}'")
        return wdef.capabilities

    def record_tool_call(
        self, run_id: int, name: str, arguments: Any, result: str, *, is_error: bool
    ) -> None:
        """One ``tool_call`` row (result cut at a few KiB), echoed in the run's live log."""
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS] + "… (cut)"
        call = {"name": name, "arguments": arguments, "result": result, "is_error": is_error}
        log = self.runs.log_path(run_id)
        if log.is_file():  # the runner opened it: the run is live on this machine
            lines = format_tool_call(call).splitlines()
            with contextlib.suppress(OSError):  # a full disk must not fail the call
                append_line(log, "\n".join(f"{TOOL_LINE}{line}" for line in lines))
        with self.ctx.store.write() as s:
            s.add(
                ToolCall(
                    run_id=run_id,
                    at=self.ctx.now(),
                    name=name[:100],
                    arguments=arguments,
                    result=result,
                    is_error=is_error,
                )
            )
        self.ctx.changed("runs")

    def record_tool_session(self, run_id: int, tools: Sequence[str] | None) -> None:
        """Note that a run's agent opened its tool session (``tools`` None) or was offered
        ``tools``."""
        with self.ctx.store.write() as s:
            run = found(s.get(IntentRun, run_id), "run", run_id)
            if run.status != RunStatus.RUNNING:
                return  # what an ended run's agent sees no longer matters
            session = dict(run.tool_session or {})
            session.setdefault("opened_at", self.ctx.now().isoformat())
            if tools is not None:
                session["tools"] = sorted(set(tools))
            run.tool_session = session
            s.add(run)

    def tool_session(self, run_id: int) -> dict[str, Any] | None:
        """What :meth:`record_tool_session` noted for a run (None: never opened)."""
        with self.ctx.store.read() as s:
            run = s.get(IntentRun, run_id)
            return dict(run.tool_session) if run is not None and run.tool_session else None

    def tool_calls(self, run_id: int) -> list[ToolCall]:
        with self.ctx.store.read() as s:
            return list(
                s.exec(select(ToolCall).where(ToolCall.run_id == run_id).order_by(col(ToolCall.id)))
            )

    def set_run_inputs(self, run_id: int, prompt: str, argv: Sequence[str]) -> None:
        """Keep a run's prompt and argv (secrets masked) on its row as it starts."""
        with self.ctx.store.write() as s:
            run = found(s.get(IntentRun, run_id), "run", run_id)
            run.prompt = prompt
            run.argv = redact_argv(argv)
            s.add(run)

    def transcript(self, run_id: int) -> dict[str, Any]:
        """A run's prompt, argv, tool calls and output (raw text: sanitise to show it)."""
        run = self.runs.get(run_id)
        calls = self.tool_calls(run_id)
        call_fields = "at name arguments result is_error"
        return {
            "run_id": run_id,
            **json_fields(run, "intent_id status", iso=False),
            "needs_review": bool(run.needs_review),
            **json_fields(run, "reason started_at finished_at prompt argv tool_session", iso=False),
            "tool_calls": [json_fields(c, call_fields, iso=False) for c in calls],
            "output": self.runs.output(run_id),
        }

    def schedule_follow_up(
        self,
        run_id: int | None,
        *,
        key: str | None = None,
        schedule_as_given: str | None = None,
        **spec: Any,
    ) -> tuple[Intent, bool]:
        """Create an intent once per key in the session's scope; returns (intent, created).

        Keys are namespaced by scope with a digest of the payload: ``key:<scope>:<key>:<digest>``
        (a named key; another payload is refused), ``fire:<intent>.<fire>:<sha256>`` (a run's
        call; every attempt of one fire gets its follow-up back), ``op:<scope>:<digest>:<n>``
        (an operator's call; a new one once the previous intent ended)."""
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
            for existing in _with_prefix(self.ctx, prefix):
                if existing.operation_key == prefix + digest[:32]:
                    return existing, False
                raise Conflict(
                    f"key {key!r} already scheduled another follow-up in this {scope.split(':')[0]} "
                    f"(intent {existing.id}, {existing.title!r}): repeat that call exactly, or use "
                    "a new key"
                )
            return self.intents.create(operation_key=prefix + digest[:32], **spec), True
        if run_id is not None:
            # a retry does not count a fire, so every attempt of one fire derives the same key
            with self.ctx.store.read() as s:
                intent_id = found(s.get(IntentRun, run_id), "run", run_id).intent_id
                intent = s.get(Intent, intent_id)
                fire = intent.fires if intent is not None else 0
            title = " ".join(str(spec.get("title", "")).split())
            rest = json.dumps(
                [spec.get("instruction", ""), spec.get("event_source"), spec.get("max_fires")]
            )
            content = [spec["kind"], given or "", spec.get("timezone") or "", title, rest]
            sha = hashlib.sha256(
                json.dumps(content, ensure_ascii=False).encode("utf-8")
            ).hexdigest()
            derived = f"fire:{intent_id}.{fire}:{sha}"
            same = self.intents.by_key(derived)
            if same is not None:
                return same, False
            return self.intents.create(operation_key=derived, **spec), True
        prefix = f"op:{scope}:{digest[:32]}:"
        earlier = _with_prefix(self.ctx, prefix)
        live = [i for i in earlier if i.status not in _ENDED]
        if live:
            return live[-1], False
        return self.intents.create(operation_key=f"{prefix}{len(earlier) + 1}", **spec), True

    def thread_post(
        self, thread_id: int, content: str, *, run_id: int | None, provenance: str
    ) -> Message:
        if not isinstance(content, str) or not content.strip():
            raise ValidationError("a message needs text")
        if len(content) > MAX_POST_CHARS:
            raise ValidationError(f"a message is too long ({MAX_POST_CHARS} characters at most)")
        message = self.threads.post(  # NotFound for a thread that does not exist
            content, thread_id=thread_id, role="assistant", run_id=run_id, provenance=provenance
        )
        self.ctx.journal.record("message posted", f"thread {thread_id}", f"message {message.id}")
        return message
