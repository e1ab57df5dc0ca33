"""What agents get, for operators: ``goalsui kb ls|cat|write GOAL PATH`` (the agents' confined KB
verbs) and ``goalsui mcp`` (goalsui's tools served over stdio, Model Context Protocol)."""

from __future__ import annotations

import argparse
import sys
from contextlib import closing

from goalsui.cli.common import (
    Subparsers,
    answer,
    command,
    group,
    local,
    open_service,
    parse_id,
    read_text_arg,
    table,
)
from goalsui.domain.untrusted import plain
from goalsui.errors import ValidationError

WRITE_HELP = "replace a file of a goal tree atomically (text from stdin or @FILE)"
MCP_HELP = "serve goalsui's tools to an agent over stdio (MCP)"
MCP_ABOUT = (
    "Serve goalsui's tools over stdio. --run RUN_ID serves what that run may do "
    "(checked against the database at every call); --goal/--worker/--thread name "
    "an operator session's scope; with neither, only read-only tools."
)


def register(sub: Subparsers) -> None:
    ksub = group(sub, "kb", "list, read and write files of one goal tree (confined)", "VERB")
    ls = command(ksub, "ls", cmd_ls, "list a folder of a goal tree", "goal")
    ls.add_argument("path", nargs="?", default=".")
    command(ksub, "cat", cmd_cat, "print a file of a goal tree", "goal", "path", json=False)
    write = command(ksub, "write", cmd_write, WRITE_HELP, "goal", "path")
    write.add_argument("source", nargs="?", default="-", help="@FILE, or - for stdin (default)")
    p = command(sub, "mcp", cmd_mcp, MCP_HELP, json=False, description=MCP_ABOUT)
    p.add_argument("--run", metavar="RUN_ID", help="serve the scope of this live run")
    p.add_argument("--goal", metavar="GOAL", help="an operator session's goal")
    p.add_argument("--worker", metavar="WORKER", help="narrow to this worker's capabilities")
    p.add_argument("--thread", metavar="THREAD_ID", help="an operator session's thread")


def cmd_ls(args: argparse.Namespace) -> int:
    entries = open_service(args, sync=False).files.list(args.goal, args.path)
    rows = [
        [
            plain(e["path"]) + ("/" if e["dir"] else ""),
            "" if e["dir"] else e["size"],
            local(e["modified"]),
        ]
        for e in entries
    ]
    return answer(args, entries, table(rows, ["path", "size", "modified"], "(empty folder)"))


def cmd_cat(args: argparse.Namespace) -> int:
    text = open_service(args, sync=False).files.read(args.goal, args.path)
    if sys.stdout.isatty():  # a terminal gets no escape sequences from a file
        text = plain(text)
    sys.stdout.write(text)
    return 0


def cmd_write(args: argparse.Namespace) -> int:
    if args.source != "-" and not args.source.startswith("@"):
        raise ValidationError("the text comes from stdin (-) or @FILE")
    text = read_text_arg(args.source)
    rel = open_service(args, sync=False).files.write(args.goal, args.path, text)
    size = len(text.encode("utf-8"))
    shown = f"wrote {args.goal}/{rel} ({size} bytes)"
    return answer(args, {"goal": args.goal, "path": rel, "bytes": size}, shown)


def cmd_mcp(args: argparse.Namespace) -> int:
    from goalsui.mcp.scope import operator_scope, run_scope
    from goalsui.mcp.server import serve

    if args.run is not None and (args.goal or args.worker or args.thread):
        raise ValidationError("--run takes its scope from the run: no --goal/--worker/--thread")
    with closing(open_service(args, actor="agent", sync=False)) as service:
        if args.run is not None:
            scope = run_scope(service, parse_id(args.run, "run"))
        else:
            thread = parse_id(args.thread, "thread") if args.thread else None
            scope = operator_scope(service, args.goal, args.worker, thread)
        serve(service, scope)
    return 0
