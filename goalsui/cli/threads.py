"""``goalsui thread ...`` and ``goalsui todo ...``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import (
    add_json,
    answer,
    local,
    open_service,
    parse_id,
    print_json,
    read_text_arg,
    table,
)
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import ValidationError

if TYPE_CHECKING:  # the models import SQLAlchemy: not on the CLI's entry path
    from goalsui.domain.records import TodoRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    thread = sub.add_parser("thread", help="conversations and their checklists")
    tsub = thread.add_subparsers(dest="thread_command", metavar="ACTION", required=True)
    new = tsub.add_parser("new", help="start a thread")
    new.add_argument("title")
    new.add_argument("--private", action="store_true", help="no intents or follow-ups allowed")
    add_json(new)
    new.set_defaults(func=cmd_thread_new)
    lst = tsub.add_parser("list", help="list threads")
    add_json(lst)
    lst.set_defaults(func=cmd_thread_list)
    show = tsub.add_parser("show", help="a thread's checklist and messages")
    show.add_argument("thread_id")
    add_json(show)
    show.set_defaults(func=cmd_thread_show)
    say = tsub.add_parser(
        "say",
        help="post a message and wait for the reply turn it starts",
        description=(
            "Post a user message in a thread and start a reply turn at once through the KB's "
            "default runner; the reply is posted in the thread. A running console or daemon "
            "runs the turn; with none, this command runs a scheduler until the reply lands."
        ),
    )
    say.add_argument("thread_id")
    say.add_argument("text", help="the message: text, @FILE or - for stdin")
    say.add_argument("--no-reply", action="store_true", help="only post the message")
    say.add_argument("--no-wait", action="store_true", help="start the reply, do not wait for it")
    say.add_argument(
        "--timeout", type=float, default=900, metavar="S", help="wait at most S seconds (900)"
    )
    say.add_argument("--pickup", type=float, default=None, help=argparse.SUPPRESS)
    add_json(say)
    say.set_defaults(func=cmd_thread_say)

    todo = sub.add_parser("todo", help="a thread's checklist")
    dsub = todo.add_subparsers(dest="todo_command", metavar="ACTION", required=True)
    tl = dsub.add_parser("list", help="open items first, then done ones")
    tl.add_argument("thread_id")
    tl.add_argument("--open", action="store_true", help="only open items")
    add_json(tl)
    tl.set_defaults(func=cmd_todo_list)
    ta = dsub.add_parser("add", help="add an item")
    ta.add_argument("thread_id")
    ta.add_argument("text")
    add_json(ta)
    ta.set_defaults(func=cmd_todo_add)
    for action in ("done", "reopen"):
        p = dsub.add_parser(action, help=f"mark an item {'done' if action == 'done' else 'open'}")
        p.add_argument("thread_id")
        p.add_argument("item", help="the todo id")
        add_json(p)
        p.set_defaults(func=cmd_todo_set, action=action)
    imp = dsub.add_parser("import", help="add the items of a Markdown '- [ ]' checklist")
    imp.add_argument("thread_id")
    imp.add_argument("source", help="@FILE, - for stdin, or the text")
    add_json(imp)
    imp.set_defaults(func=cmd_todo_import)


def cmd_thread_new(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import thread_json

    service = open_service(args)
    thread = service.threads.create(args.title, private=args.private)
    return answer(
        args,
        thread_json(thread.record()),
        f"thread {thread.id}: {thread.title}" + (" (private)" if thread.private else ""),
    )


def cmd_thread_list(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import thread_json

    service = open_service(args)
    threads = service.threads.list()
    if args.json:
        print_json([thread_json(t.record()) for t in threads])
        return 0
    rows = [[t.id, t.title, "private" if t.private else "", t.revision] for t in threads]
    print(table(rows, ["id", "title", "", "rev"]) if rows else "no threads")
    return 0


def cmd_thread_show(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import thread_json, todo_json

    service = open_service(args)
    thread_id = parse_id(args.thread_id, "thread")
    thread = service.threads.get(thread_id)
    todos = service.todos.list(thread_id)
    messages = service.threads.messages(thread_id)
    if args.json:
        data = thread_json(thread.record())
        data["todos"] = [todo_json(t.record()) for t in todos]
        data["messages"] = [_message_json(m) for m in messages]
        print_json(data)
        return 0
    print(f"thread {thread.id}: {thread.title}" + (" (private)" if thread.private else ""))
    for t in todos:
        print(f"  [{'x' if t.done else ' '}] {t.id}: {plain(t.text)}")
    for m in messages:
        _print_message(m)
    return 0


def _message_json(m: Any) -> dict[str, Any]:
    return {
        "id": m.id,
        "role": m.role,
        "content": m.content,
        "provenance": m.provenance,
        "intent_id": m.intent_id,
        "run_id": m.run_id,
        "created_at": m.created_at,
    }


def _print_message(m: Any) -> None:
    label = f" — {plain(m.provenance)}" if m.provenance else ""
    print(f"\n{local(m.created_at)} {m.role}{label}\n{plain(m.content)}")


def cmd_thread_say(args: argparse.Namespace) -> int:
    import asyncio

    from goalsui.cli.reply_wait import await_reply
    from goalsui.domain.shapes import run_json

    text = read_text_arg(args.text)
    service = open_service(args)
    said = service.threads.say(parse_id(args.thread_id, "thread"), text, reply=not args.no_reply)
    if said.intent is None or args.no_wait:
        if args.json:
            print_json(
                {
                    "message": _message_json(said.message),
                    "reply_intent_id": said.intent and said.intent.id,
                }
            )
        else:
            extra = f"; reply turn: intent {said.intent.id}" if said.intent else ""
            print(f"message {said.message.id} posted{extra}")
        return 0

    def attempt(run: Any) -> None:
        if run.status not in (RunStatus.OK, RunStatus.SILENT):
            reason = f": {plain(run.reason, limit=300)}" if run.reason else ""
            sys.stderr.write(f"reply attempt {run.attempt} {run.status}{reason}\n")

    result = asyncio.run(
        await_reply(
            service,
            int(said.intent.id or 0),
            timeout=args.timeout,
            on_run=attempt,
            pickup=args.pickup,
        )
    )
    if args.json:
        print_json(
            {
                "message": _message_json(said.message),
                "reply_intent_id": said.intent.id,
                "status": result.status,
                "reason": result.reason,
                "reply": _message_json(result.reply) if result.reply else None,
                "runs": [run_json(r.record()) for r in result.runs],
            }
        )
    elif result.reply is not None:
        _print_message(result.reply)
    elif result.status == RunStatus.SILENT:
        print("(the reply was silent: nothing to say)")
    if result.status in (RunStatus.OK, RunStatus.SILENT):
        return 0
    if not args.json:
        raise ValidationError(f"no reply: {plain(result.reason or result.status, limit=300)}")
    return 1


def _print_todos(todos: list[TodoRecord]) -> None:
    rows = [[t.id, "x" if t.done else " ", t.text] for t in todos]
    print(table(rows, ["id", "done", "text"]) if rows else "no todos")


def cmd_todo_list(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import todo_json

    service = open_service(args)
    todos = service.todos.list(parse_id(args.thread_id, "thread"), include_done=not args.open)
    if args.json:
        print_json([todo_json(t.record()) for t in todos])
    else:
        _print_todos([t.record() for t in todos])
    return 0


def cmd_todo_add(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import todo_json

    service = open_service(args)
    todo = service.todos.add(parse_id(args.thread_id, "thread"), args.text)
    return answer(args, todo_json(todo.record()), f"todo {todo.id} added")


def cmd_todo_set(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import todo_json

    service = open_service(args)
    thread_id = parse_id(args.thread_id, "thread")
    item = parse_id(args.item, "todo")
    todo = (service.todos.complete if args.action == "done" else service.todos.reopen)(
        thread_id, item
    )
    return answer(
        args, todo_json(todo.record()), f"todo {todo.id} {'done' if todo.done else 'reopened'}"
    )


def cmd_todo_import(args: argparse.Namespace) -> int:
    from goalsui.domain.shapes import todo_json

    service = open_service(args)
    todos = service.todos.import_checklist(
        parse_id(args.thread_id, "thread"), read_text_arg(args.source)
    )
    return answer(args, [todo_json(t.record()) for t in todos], f"{len(todos)} todos imported")
