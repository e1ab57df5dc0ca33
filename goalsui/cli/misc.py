"""``goalsui init``, ``doctor`` and ``schedule preview``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from goalsui.cli.common import Subparsers, answer, command, group, kb_path, open_service


def register(sub: Subparsers) -> None:
    init = command(
        sub, "init", cmd_init, "create an empty KB (or a copy of the sample with --sample)", "path"
    )
    init.add_argument(
        "--sample", action="store_true", help="copy the bundled sample KB and load the demo records"
    )
    command(sub, "doctor", cmd_doctor, "validate the KB and the database; exit 1 on problems")
    ssub = group(sub, "schedule", "schedule tools")
    preview = command(
        ssub, "preview", cmd_preview, "the next occurrences of a cron expression", "expression"
    )
    preview.add_argument("--tz", default="UTC")
    preview.add_argument("--from", dest="start", metavar="ISO")
    preview.add_argument("--count", type=int, default=5)


def cmd_init(args: argparse.Namespace) -> int:
    from goalsui.kb.authoring import agents_on_path
    from goalsui.kb.layout import init_kb

    path = init_kb(Path(args.path), sample=args.sample)
    result: dict[str, object] = {"kb": str(path)}
    lines = [f"KB ready at {path}"]
    if args.sample:
        from goalsui.demo import load_demo_records

        args.kb = str(path)
        result.update(load_demo_records(open_service(args)))
    else:  # no runner is chosen for the operator: say so, and offer the agent CLIs found
        agents = agents_on_path()
        result.update(runner=None, agents_on_path=agents)
        lines.append(
            "no default runner is set: turns without their own runner fail until you set one"
        )
        if agents:
            lines.append(
                f"agent CLIs found on PATH: {', '.join(agents)}; to use one, add to "
                f"{path}/goalsui.yaml:\n  runner:\n    agent: {agents[0]}"
            )
        else:
            lines.append(
                f'set one in {path}/goalsui.yaml, e.g.  runner: {{command: ["claude", "-p"]}}'
            )
        lines.append("(see docs/agents.md)")
    lines.append(f"open it with: goalsui --kb {path}")
    return answer(args, result, "\n".join(lines))


def cmd_doctor(args: argparse.Namespace) -> int:
    from goalsui.kb.layout import KB

    kb = KB(kb_path(args))
    warnings: list[dict[str, Any]] = []
    if not kb.exists():
        problems = [{"path": str(kb.root), "line": None, "message": "no KB folder here"}]
    else:
        service = open_service(args, sync=False)
        problems = [p.as_json() for p in service.index.doctor()]
        warnings = [w.as_json() for w in service.index.capability_warnings()]
    ok = not problems  # warnings alone leave the exit code 0
    lines = ["ok: KB and database look healthy"] if ok else []
    for p in problems:
        lines.append(
            f"{p['path']}:{p['line']}: {p['message']}"
            if p["line"]
            else f"{p['path']}: {p['message']}"
        )
    lines += [f"{w['path']}: warning: {w['message']}" for w in warnings]
    answer(args, {"ok": ok, "problems": problems, "warnings": warnings}, "\n".join(lines))
    return 0 if ok else 1


def cmd_preview(args: argparse.Namespace) -> int:
    from goalsui.service import schedule_preview

    result = schedule_preview(args.expression, tz=args.tz, start=args.start, count=args.count)
    return answer(args, result, "\n".join(str(item) for item in result["occurrences"]))
