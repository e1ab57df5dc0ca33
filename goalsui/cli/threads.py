"""``goalsui thread ...`` and ``goalsui todo ...``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    add_options,
    answer,
    command,
    group,
    local,
    open_service,
    parse_id,
    print_json,
    read_text_arg,
    table,
)
from goalsui.domain.records import RunRecord, saved_id
from goalsui.domain.replies import is_reply
from goalsui.domain.shapes import run_json, thread_json, todo_json
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.domain.views import json_fields
from goalsui.errors import ValidationError

if TYPE_CHECKING:  # the service imports SQLAlchemy: not on the CLI's entry path
    from goalsui.service import Service
    from goalsui.service.threads import ReplyResult

SAY_HELP = "post a message and wait for the reply turn it starts"
SAY_ABOUT = (
    "Post a user message in a thread and start a reply turn at once through the KB's "
    "default runner; the reply is posted in the thread. A running console or daemon "
    "runs the turn; with none, this command runs a scheduler until the reply lands."
)
IMPORT_HELP = "add the items of a Markdown '- [ ]' checklist"


def register(sub: Subparsers) -> None:
    tsub = group(sub, "thread", "conversations and their checklists")
    new = command(tsub, "new", cmd_thread_new, "start a thread", "title")
    new.add_argument("--private", action="store_true", help="no intents or follow-ups allowed")
    command(tsub, "list", cmd_thread_list, "list threads")
    command(tsub, "show", cmd_thread_show, "a thread's checklist and messages", "thread_id")
    say = command(tsub, "say", cmd_thread_say, SAY_HELP, "thread_id", description=SAY_ABOUT)
    say.add_argument("text", help="the message: text, @FILE or - for stdin")
    add_flags(say, no_reply="only post the message", no_wait="start the reply, do not wait for it")
    add_options(say, ("--timeout", float, 900, "S", "wait at most S seconds (900)"))
    # how long to wait for another scheduler (console, daemon) to start the turn before running
    # one here: a running scheduler looks at the database at least every second
    say.add_argument("--pickup", type=float, default=2.5, help=argparse.SUPPRESS)

    dsub = group(sub, "todo", "a thread's checklist")
    tl = command(dsub, "list", cmd_todo_list, "open items first, then done ones", "thread_id")
    tl.add_argument("--open", action="store_true", help="only open items")
    command(dsub, "add", cmd_todo_add, "add an item", "thread_id", "text")
    for action, state in (("done", "done"), ("reopen", "open")):
        p = command(dsub, action, cmd_todo_set, f"mark an item {state}", "thread_id")
        p.add_argument("item", help="the todo id")
        p.set_defaults(action=action)
    imp = command(dsub, "import", cmd_todo_import, IMPORT_HELP, "thread_id")
    imp.add_argument("source", help="@FILE, - for stdin, or the text")


def cmd_thread_new(args: argparse.Namespace) -> int:

    thread = open_service(args).threads.create(args.title, private=args.private)
    text = f"thread {thread.id}: {thread.title}" + (" (private)" if thread.private else "")
    return answer(args, thread_json(thread.record()), text)


def cmd_thread_list(args: argparse.Namespace) -> int:

    threads = open_service(args).threads.list()
    rows = [[t.id, t.title, "private" if t.private else "", t.revision] for t in threads]
    text = table(rows, ["id", "title", "", "rev"], "no threads")
    return answer(args, [thread_json(t) for t in threads], text)


def cmd_thread_show(args: argparse.Namespace) -> int:

    service = open_service(args)
    thread_id = parse_id(args.thread_id, "thread")
    thread = service.threads.get(thread_id)
    todos = service.todos.list(thread_id)
    messages = service.threads.messages(thread_id)
    data = {**thread_json(thread.record()), "todos": [todo_json(t) for t in todos]}
    lines = [f"thread {thread.id}: {thread.title}" + (" (private)" if thread.private else "")]
    lines += [f"  [{'x' if t.done else ' '}] {t.id}: {plain(t.text)}" for t in todos]
    lines += [_message_text(m) for m in messages]
    text = "\n".join(lines)
    return answer(args, {**data, "messages": [_message_json(m) for m in messages]}, text)


def _message_json(m: Any) -> dict[str, Any]:
    return json_fields(m, "id role content provenance intent_id run_id created_at")


def _message_text(m: Any) -> str:
    label = f" — {plain(m.provenance)}" if m.provenance else ""
    return f"\n{local(m.created_at)} {m.role}{label}\n{plain(m.content)}"


def cmd_thread_say(args: argparse.Namespace) -> int:

    text = read_text_arg(args.text)
    service = open_service(args)
    said = service.threads.say(parse_id(args.thread_id, "thread"), text, reply=not args.no_reply)
    posted = {
        "message": _message_json(said.message),
        "reply_intent_id": said.intent and said.intent.id,
    }
    if said.intent is None or args.no_wait:
        extra = f"; reply turn: intent {said.intent.id}" if said.intent else ""
        return answer(args, posted, f"message {said.message.id} posted{extra}")

    def attempt(run: Any) -> None:
        if run.status not in (RunStatus.OK, RunStatus.SILENT):
            reason = f": {plain(run.reason, limit=300)}" if run.reason else ""
            sys.stderr.write(f"reply attempt {run.attempt} {run.status}{reason}\n")

    reply = await_reply(service, int(said.intent.id or 0), args.timeout, args.pickup, attempt)
    result = asyncio.run(reply)
    if args.json:
        print_json(
            {
                **posted,
                "status": result.status,
                "reason": result.reason,
                "reply": _message_json(result.reply) if result.reply else None,
                "runs": [run_json(r.record()) for r in result.runs],
            }
        )
    elif result.reply is not None:
        print(_message_text(result.reply))
    elif result.status == RunStatus.SILENT:
        print("(the reply was silent: nothing to say)")
    if result.status in (RunStatus.OK, RunStatus.SILENT):
        return 0
    if not args.json:
        raise ValidationError(f"no reply: {plain(result.reason or result.status, limit=300)}")
    return 1


def cmd_todo_list(args: argparse.Namespace) -> int:

    todos = open_service(args).todos.list(
        parse_id(args.thread_id, "thread"), include_done=not args.open
    )
    rows = [[t.id, "x" if t.done else " ", t.text] for t in todos]
    text = table(rows, ["id", "done", "text"], "no todos")
    return answer(args, [todo_json(t) for t in todos], text)


def cmd_todo_add(args: argparse.Namespace) -> int:

    todo = open_service(args).todos.add(parse_id(args.thread_id, "thread"), args.text)
    return answer(args, todo_json(todo.record()), f"todo {todo.id} added")


def cmd_todo_set(args: argparse.Namespace) -> int:
    todos = open_service(args).todos
    mark = todos.complete if args.action == "done" else todos.reopen
    todo = mark(parse_id(args.thread_id, "thread"), parse_id(args.item, "todo"))
    text = f"todo {todo.id} {'done' if todo.done else 'reopened'}"
    return answer(args, todo_json(todo.record()), text)


def cmd_todo_import(args: argparse.Namespace) -> int:
    text = read_text_arg(args.source)
    todos = open_service(args).todos.import_checklist(parse_id(args.thread_id, "thread"), text)
    return answer(args, [todo_json(t.record()) for t in todos], f"{len(todos)} todos imported")


async def await_reply(
    service: Service,
    intent_id: int,
    timeout: float,
    pickup: float,
    on_run: Callable[[RunRecord], None],
) -> ReplyResult:
    """Wait for a reply's decision; with no scheduler in ``pickup`` s, run one here (which is why
    this lives in the CLI: the service never starts a scheduler)."""
    from goalsui.scheduler import Scheduler

    intent = service.intents.get(intent_id)
    if not is_reply(intent.operation_key):
        raise ValidationError(f"intent {intent_id} is not a reply")
    deadline = time.monotonic() + timeout
    scheduler = None
    started = time.monotonic()
    seen: set[int] = set()
    try:
        while True:
            result = await asyncio.to_thread(service.threads.reply_state, intent_id)
            runs = result.runs if result else service.runs.list(intent_id=intent_id, limit=50)
            for run in sorted(runs, key=lambda r: r.id or 0):
                if run.status != RunStatus.RUNNING and run.id not in seen:
                    seen.add(saved_id(run))
                    on_run(run.record())
            if result is not None:
                return result
            if time.monotonic() > deadline:
                raise ValidationError(
                    f"no reply within {timeout:.0f}s (intent {intent_id} keeps trying; "
                    f"'goalsui runs --intent {intent_id}' shows its runs)"
                )
            if scheduler is None and not runs and time.monotonic() - started > pickup:
                scheduler = Scheduler(service)
                await scheduler.start()
            await asyncio.sleep(0.25)
    finally:
        if scheduler is not None:
            with contextlib.suppress(Exception):
                await scheduler.stop()
