"""``goalsui mcp``: serve goalsui's tools to an agent over stdio (Model Context Protocol)."""

from __future__ import annotations

import argparse

from goalsui.cli.common import Subparsers, command, open_service, parse_id


def register(sub: Subparsers) -> None:
    p = command(
        sub,
        "mcp",
        cmd_mcp,
        "serve goalsui's tools to an agent over stdio (MCP)",
        json=False,
        description=(
            "Serve goalsui's tools over stdio. --run RUN_ID serves what that run may do "
            "(checked against the database at every call); --goal/--worker/--thread name "
            "an operator session's scope; with neither, only read-only tools."
        ),
    )
    p.add_argument("--run", metavar="RUN_ID", help="serve the scope of this live run")
    p.add_argument("--goal", metavar="GOAL", help="an operator session's goal")
    p.add_argument("--worker", metavar="WORKER", help="narrow to this worker's capabilities")
    p.add_argument("--thread", metavar="THREAD_ID", help="an operator session's thread")


def cmd_mcp(args: argparse.Namespace) -> int:
    from goalsui.errors import ValidationError
    from goalsui.mcp.scope import operator_scope, run_scope

    service = open_service(args, actor="agent", sync=False)
    try:
        if args.run is not None:
            if args.goal or args.worker or args.thread:
                raise ValidationError(
                    "--run takes its scope from the run: no --goal/--worker/--thread"
                )
            scope = run_scope(service, parse_id(args.run, "run"))
        else:
            thread = parse_id(args.thread, "thread") if args.thread else None
            scope = operator_scope(service, args.goal, args.worker, thread)
        from goalsui.mcp.server import serve

        serve(service, scope)
    finally:
        service.close()
    return 0
