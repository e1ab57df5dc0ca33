"""``goalsui init``, ``doctor`` and ``schedule preview``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from goalsui.cli.common import add_json, open_service, print_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = sub.add_parser("init", help="create an empty KB (or a copy of the sample with --sample)")
    init.add_argument("path")
    init.add_argument(
        "--sample", action="store_true", help="copy the bundled sample KB and load the demo records"
    )
    add_json(init)
    init.set_defaults(func=cmd_init)

    doctor = sub.add_parser("doctor", help="validate the KB and the database; exit 1 on problems")
    add_json(doctor)
    doctor.set_defaults(func=cmd_doctor)

    schedule = sub.add_parser("schedule", help="schedule tools")
    ssub = schedule.add_subparsers(dest="schedule_command", metavar="ACTION", required=True)
    preview = ssub.add_parser("preview", help="the next occurrences of a cron expression")
    preview.add_argument("expression")
    preview.add_argument("--tz", default="UTC")
    preview.add_argument("--from", dest="start", metavar="ISO")
    preview.add_argument("--count", type=int, default=5)
    add_json(preview)
    preview.set_defaults(func=cmd_preview)


def cmd_init(args: argparse.Namespace) -> int:
    from goalsui.kb.authoring import agents_on_path
    from goalsui.kb.layout import init_kb

    path = init_kb(Path(args.path), sample=args.sample)
    result: dict[str, object] = {"kb": str(path)}
    if args.sample:
        from goalsui.demo import load_demo_records

        args.kb = str(path)
        service = open_service(args)
        result.update(load_demo_records(service))
    agents = [] if args.sample else agents_on_path()
    if args.json:
        print_json(
            {**result, "runner": None, "agents_on_path": agents} if not args.sample else result
        )
    else:
        print(f"KB ready at {path}")
        if not args.sample:
            print_runner_offer(path, agents)
        print(f"open it with: goalsui --kb {path}")
    return 0


def print_runner_offer(path: Path, agents: list[str]) -> None:
    """No runner is chosen for the operator: say so, and offer the agent CLIs found."""
    print("no default runner is set: turns without their own runner fail until you set one")
    if agents:
        print(
            f"agent CLIs found on PATH: {', '.join(agents)}; to use one, add to {path}/goalsui.yaml:"
        )
        print(f"  runner:\n    agent: {agents[0]}")
    else:
        print(f'set one in {path}/goalsui.yaml, e.g.  runner: {{command: ["claude", "-p"]}}')
    print("(see docs/agents.md)")


def cmd_doctor(args: argparse.Namespace) -> int:
    from goalsui.kb.layout import KB

    kb = KB(args.kb or __import__("os").environ.get("GOALSUI_KB") or "kb")
    warnings: list[dict[str, Any]] = []
    if not kb.exists():
        problems = [{"path": str(kb.root), "line": None, "message": "no KB folder here"}]
    else:
        service = open_service(args, sync=False)
        problems = [p.as_json() for p in service.index.doctor()]
        warnings = [w.as_json() for w in service.index.capability_warnings()]
    ok = not problems  # warnings alone leave the exit code 0
    if args.json:
        print_json({"ok": ok, "problems": problems, "warnings": warnings})
    else:
        if ok:
            print("ok: KB and database look healthy")
        for p in problems:
            where = f"{p['path']}:{p['line']}" if p["line"] else p["path"]
            sys.stdout.write(f"{where}: {p['message']}\n")
        for w in warnings:
            sys.stdout.write(f"{w['path']}: warning: {w['message']}\n")
    return 0 if ok else 1


def cmd_preview(args: argparse.Namespace) -> int:
    from goalsui.service import schedule_preview

    result = schedule_preview(args.expression, tz=args.tz, start=args.start, count=args.count)
    if args.json:
        print_json(result)
    else:
        for item in result["occurrences"]:
            print(item)
    return 0
