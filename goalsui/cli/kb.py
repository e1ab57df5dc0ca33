"""``goalsui kb ls|cat|write GOAL PATH``: the agents' confined KB verbs for operators."""

from __future__ import annotations

import argparse
import sys

from goalsui.cli.common import (
    add_json,
    answer,
    local,
    open_service,
    print_json,
    read_text_arg,
    table,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kb = sub.add_parser("kb", help="list, read and write files of one goal tree (confined)")
    ksub = kb.add_subparsers(dest="kb_command", metavar="VERB", required=True)
    ls = ksub.add_parser("ls", help="list a folder of a goal tree")
    ls.add_argument("goal")
    ls.add_argument("path", nargs="?", default=".")
    add_json(ls)
    ls.set_defaults(func=cmd_ls)
    cat = ksub.add_parser("cat", help="print a file of a goal tree")
    cat.add_argument("goal")
    cat.add_argument("path")
    cat.set_defaults(func=cmd_cat)
    write = ksub.add_parser(
        "write", help="replace a file of a goal tree atomically (text from stdin or @FILE)"
    )
    write.add_argument("goal")
    write.add_argument("path")
    write.add_argument("source", nargs="?", default="-", help="@FILE, or - for stdin (default)")
    add_json(write)
    write.set_defaults(func=cmd_write)


def cmd_ls(args: argparse.Namespace) -> int:
    entries = open_service(args, sync=False).agents.kb_list(args.goal, args.path)
    if args.json:
        print_json(entries)
        return 0
    from goalsui.domain.untrusted import plain

    rows = [
        [
            plain(e["path"]) + ("/" if e["dir"] else ""),
            "" if e["dir"] else e["size"],
            local(e["modified"]),
        ]
        for e in entries
    ]
    print(table(rows, ["path", "size", "modified"]) if rows else "(empty folder)")
    return 0


def cmd_cat(args: argparse.Namespace) -> int:
    text = open_service(args, sync=False).agents.kb_read(args.goal, args.path)
    if sys.stdout.isatty():  # a terminal gets no escape sequences from a file
        from goalsui.domain.untrusted import plain

        text = plain(text)
    sys.stdout.write(text)
    return 0


def cmd_write(args: argparse.Namespace) -> int:
    from goalsui.errors import ValidationError

    if args.source != "-" and not args.source.startswith("@"):
        raise ValidationError("the text comes from stdin (-) or @FILE")
    text = read_text_arg(args.source)
    service = open_service(args, sync=False)
    path = service.agents.kb_write(args.goal, args.path, text)
    rel = "/".join(service.agents.tree(args.goal).parts(path))
    return answer(
        args,
        {"goal": args.goal, "path": rel, "bytes": len(text.encode("utf-8"))},
        f"wrote {args.goal}/{rel} ({len(text.encode('utf-8'))} bytes)",
    )
