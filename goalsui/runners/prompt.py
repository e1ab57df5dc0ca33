"""Prompt assembly for isolated turns. Pure functions: text in, text out. Everything but the
operator's instruction is fenced as untrusted data (docs/agents.md)."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goalsui.domain.untrusted import fence_untrusted, plain

if TYPE_CHECKING:
    from goalsui.domain.records import MessageRecord, TodoRecord
    from goalsui.domain.views import GoalView

MAX_CONTEXT_TODOS = 10
MAX_CONTEXT_GOALS = 10
MAX_CONTEXT_MESSAGES = 5
MAX_MESSAGE_CHARS = 2000
MAX_PAYLOAD_CHARS = 20_000
#: how much of ``protocol.md`` a plain command gets (the rest is cut with a note)
MAX_PROTOCOL_CHARS = 8 * 1024
#: how much of a worker's ``prompt.md`` a plain command gets
MAX_WORKER_PROMPT_CHARS = 64 * 1024


@dataclass(frozen=True)
class TurnContext:
    """Everything a non-worker turn may see, gathered by the caller (no I/O here)."""

    intent_id: int | None
    title: str
    instruction: str
    kind: str
    schedule: str | None = None
    timezone: str = "UTC"
    silent_token: str = "NOTHING_TO_REPORT"
    kb_root: str | None = None
    thread_id: int | None = None
    thread_title: str | None = None
    goal_id: str | None = None
    goal_dir: str | None = None
    todos: Sequence[TodoRecord] = ()  # the thread's open ones
    goals: Sequence[GoalView] = ()  # the active ones
    messages: Sequence[MessageRecord] = ()  # the thread's last ones, oldest first
    checklist: str | None = None
    event: str | None = None  # the event that fired it, as :func:`event_block` fences it
    reply: bool = False  # a reply to the user's message in a conversation


def worker_shim(
    goal_id: str, worker: str, kb_root: str, *, silent_token: str = "NOTHING_TO_REPORT"
) -> str:
    """The static prompt of a worker tick (docs/architecture.md, "Isolated turns and runners")."""
    return (
        f"You are worker `{worker}` for goal `{goal_id}`. "
        f"Your knowledge base is at `{kb_root}`. "
        f"Read `workers/{worker}/prompt.md`, then `protocol.md` (goalsui's `goal_kb_read` "
        "tool reads them), then act: "
        "do the one task your prompt describes, following the protocol. "
        f"Paths are relative to the goal directory `{kb_root.rstrip('/')}/{goal_id}`, "
        "your working directory. "
        "`get_context` tells you your run, its deadline and your tools. "
        "Before you finish: schedule (`schedule_intent`) every follow-up you promise, and "
        "add a todo (`todo_add`) for work you leave unfinished; a promise that is not "
        "scheduled is forgotten. "
        "Your standard output is the result of this tick: it is saved to your outbox, "
        "appended to the goal log and posted with its provenance. "
        f"If there is nothing to report, output exactly `{silent_token}`.\n"
    )


@dataclass(frozen=True)
class WorkerContext:
    """What a plain command's worker tick is told (the files read by the caller)."""

    goal_id: str
    worker: str
    kb_root: str
    goal_name: str | None = None
    run_id: int | None = None
    now: datetime | None = None
    timezone: str = "UTC"
    prompt: str | None = None  # workers/<w>/prompt.md; None: missing or unreadable
    protocol: str | None = None  # protocol.md; None: missing or unreadable
    silent_token: str = "NOTHING_TO_REPORT"


def file_block(path: str, text: str, *, limit: int, about: str) -> str:
    """A KB file's text in a fence it cannot close (as ``fence_untrusted`` builds one), cut at
    ``limit`` characters with a note; ``about`` says what the file is to the reader."""
    body = plain(text)
    if len(body) > limit:
        body = (
            body[:limit] + f"\n… (cut here: {len(body) - limit} more characters are in "
            f"`{path}` in the goal directory)"
        )
    if not body.endswith("\n"):
        body += "\n"
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    nonce = secrets.token_hex(8)
    return (
        f"The block below is the file `{path}` of your goal ({about}), id {nonce}. It ends "
        f"only at the closing fence followed by the line 'end-file {nonce}'.\n"
        f"{ticks}file {nonce}\n{body}{ticks}\nend-file {nonce}\n"
    )


def worker_instructions(
    ctx: WorkerContext, *, checklist: str | None = None, event: str | None = None
) -> tuple[str, str]:
    """A plain command's tick: context, protocol, then the worker's prompt (and checklist)."""
    goal_dir = f"{ctx.kb_root.rstrip('/')}/{ctx.goal_id}"
    prompt_path = f"workers/{ctx.worker}/prompt.md"
    parts = [
        f"You are worker `{ctx.worker}` for goal `{ctx.goal_id}`, in an isolated turn "
        "started by goalsui's scheduler: nobody is at the keyboard, and goalsui gives this "
        "turn no tools, so everything you need is below. Do the one task your prompt (the "
        "final message) describes, following the goal's protocol. "
        f"Your working directory is the goal directory `{goal_dir}`. "
        "Your standard output is the result of this tick: it is saved to your outbox, "
        "appended to the goal log and posted with its provenance. "
        f"If there is nothing to report, output exactly `{ctx.silent_token}`."
    ]
    named = f" ({' '.join(plain(ctx.goal_name).split())[:120]})" if ctx.goal_name else ""
    lines = [f"- goal: `{ctx.goal_id}`{named}", f"- worker: `{ctx.worker}`"]
    if ctx.run_id is not None:
        lines.append(f"- run: {ctx.run_id}")
    if ctx.now is not None:
        lines.append(f"- time: {ctx.now.isoformat(timespec='seconds')} ({ctx.timezone})")
    parts.append("This turn:\n" + "\n".join(lines))
    if ctx.protocol is not None:
        about = "its contract: message formats, conventions, KPIs"
        block = file_block("protocol.md", ctx.protocol, limit=MAX_PROTOCOL_CHARS, about=about)
        parts.append("The goal's protocol:\n" + block)
    else:
        parts.append("The goal has no readable `protocol.md`.")
    if event is not None:
        parts.append("The event that fired this tick:\n" + event)
    if ctx.prompt is not None:
        about = "your instructions, written for this worker"
        block = file_block(prompt_path, ctx.prompt, limit=MAX_WORKER_PROMPT_CHARS, about=about)
        instruction = "Your prompt:\n" + block
    else:
        instruction = (
            f"Your prompt `{prompt_path}` is missing or unreadable: report that, "
            "and do nothing else."
        )
    if checklist is not None and checklist.strip():
        instruction = instruction.rstrip() + "\n\n" + checklist_block(checklist)
    return "\n\n".join(parts), instruction


def event_block(source: str | None, delivery: str | None, payload: Any) -> str:
    """An event payload as a fenced block of untrusted data (JSON, pretty-printed)."""
    try:
        text = json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = str(payload)
    if len(text) > MAX_PAYLOAD_CHARS:
        text = text[:MAX_PAYLOAD_CHARS] + "\n… (payload cut at 20000 characters)"
    label = f"event payload from source {source or '?'}, delivery {delivery or '?'}"
    return fence_untrusted(label, text)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _opening(ctx: TurnContext) -> str:
    if ctx.reply:
        return (
            "This is a reply turn in a conversation: the operator wrote the final message in "
            f"thread {ctx.thread_id} and waits for your answer. No browser tools are available. "
            "Your standard output is posted in the thread as your reply, with its provenance."
        )
    return (
        "This is an isolated turn started by goalsui's scheduler: nobody is at the keyboard, "
        "and no browser tools are available. Answer the instruction in the final message; "
        "your standard output is posted back with its provenance. "
        f"If nothing needs attention, reply exactly `{ctx.silent_token}`."
    )


def build_messages(ctx: TurnContext) -> tuple[str, str]:
    """The messages of a thread/goal turn; the LAST one is the operator's instruction."""
    parts: list[str] = [_opening(ctx)]
    origin = f"Intent {ctx.intent_id} ({ctx.kind}"
    if ctx.schedule:
        origin += f" {ctx.schedule}"
        if ctx.kind == "cron":
            origin += f", {ctx.timezone}"
    origin += f"): {ctx.title}."
    parts.append(origin)
    if ctx.thread_id is not None:
        parts.append(f"Destination: thread {ctx.thread_id} ({ctx.thread_title or 'untitled'}).")
    if ctx.goal_id is not None:
        where = f" at `{ctx.goal_dir}`" if ctx.goal_dir else ""
        parts.append(
            f"Goal: `{ctx.goal_id}`{where}. Read its `protocol.md` before acting on it; "
            "your working directory is that goal directory."
        )
    elif ctx.kb_root:
        parts.append(f"The knowledge base is at `{ctx.kb_root}`.")
    if ctx.goals:
        goals = list(ctx.goals)[:MAX_CONTEXT_GOALS]
        lines = "\n".join(
            f"- {g.goal_id}: {_cut(' '.join(g.name.split()), 120)}"
            + (f" — {_cut(' '.join(g.task.split()), 200)}" if g.task else "")
            for g in goals
        )
        parts.append(
            f"Active goals ({len(goals)} shown, at most {MAX_CONTEXT_GOALS}):\n"
            + fence_untrusted("active goals", lines)
        )
    if ctx.thread_id is not None:
        todos = list(ctx.todos)[:MAX_CONTEXT_TODOS]
        if todos:
            lines = "\n".join(
                f"- [ ] {t.text}" + (f" (todo {t.id})" if t.id is not None else "") for t in todos
            )
            parts.append(
                f"Open todos of thread {ctx.thread_id} ({len(todos)} shown, at most {MAX_CONTEXT_TODOS}):\n"
                + fence_untrusted(f"open todos of thread {ctx.thread_id}", lines)
            )
        else:
            parts.append(f"Thread {ctx.thread_id} has no open todos.")
    if recent := _recent_messages(ctx):
        parts.append(recent)
    if ctx.event is not None:
        parts.append("The event that fired this intent:\n" + ctx.event)
    instruction = ctx.instruction if ctx.instruction.strip() else f"(no instruction) {ctx.title}"
    if ctx.checklist is not None and ctx.checklist.strip():
        instruction = instruction.rstrip() + "\n\n" + checklist_block(ctx.checklist)
    return "\n\n".join(parts), instruction


def _recent_messages(ctx: TurnContext) -> str | None:
    """The thread's last messages, fenced, less the one this turn replies to."""
    earlier = list(ctx.messages)
    if earlier and earlier[-1].role == "user" and earlier[-1].content == ctx.instruction:
        earlier.pop()
    if not earlier:
        return None
    shown = earlier[-MAX_CONTEXT_MESSAGES:]
    lines = "\n\n".join(
        f"[{m.role}{' — ' + m.provenance if m.provenance else ''}]\n{_cut(m.content, MAX_MESSAGE_CHARS)}"
        for m in shown
    )
    return f"The last {len(shown)} messages of the thread:\n" + fence_untrusted(
        f"recent messages of thread {ctx.thread_id}", lines
    )


def checklist_block(checklist: str) -> str:
    """A heartbeat checklist as the operator's instruction (not fenced: they wrote it)."""
    return (
        "Heartbeat checklist (the operator's list of what to look at on this tick):\n"
        + checklist.strip("\n")
        + "\n"
    )


def render_prompt(messages: tuple[str, str]) -> str:
    """One text for a command's stdin: the context, then the operator's instruction last."""
    context, instruction = messages
    return (
        f"## Context\n\n{context.rstrip()}\n\n"
        f"## Instruction (the message to act on)\n\n{instruction.rstrip()}\n"
    )


def worker_prompt_with_data(
    shim: str, *, checklist: str | None = None, event: str | None = None
) -> str:
    """The shim, then the heartbeat checklist (the operator's), then fenced event data."""
    blocks = [shim.rstrip() + "\n"]
    if checklist is not None and checklist.strip():
        blocks.append(checklist_block(checklist))
    if event is not None:
        blocks.append("The event that fired this tick:\n" + event)
    return "\n".join(blocks)
