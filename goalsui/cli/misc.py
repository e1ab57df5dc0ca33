"""``goalsui init``, ``doctor``, ``schedule preview``, ``config set runner`` (the KB's default
runner) and ``db upgrade|status`` (the database schema)."""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path
from typing import Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    answer,
    command,
    db_settings,
    group,
    kb_path,
    open_service,
)
from goalsui.errors import ValidationError

PRESET_HELP = "an agent preset (claude, codex, goose) or a builtin (report)"
COMMAND_HELP = "a command instead, split like a shell: 'llm -m gpt-4o'"

RUNNER_HELP = "the default runner of turns that name none (comments in goalsui.yaml are kept)"


def register(sub: Subparsers) -> None:
    init = command(
        sub, "init", cmd_init, "create an empty KB (or a copy of the sample with --sample)", "path"
    )
    add_flags(init, sample="copy the bundled sample KB and load the demo records")
    command(sub, "doctor", cmd_doctor, "validate the KB and the database; exit 1 on problems")
    ssub = group(sub, "schedule", "schedule tools")
    preview = command(
        ssub, "preview", cmd_preview, "the next occurrences of a cron expression", "expression"
    )
    preview.add_argument("--tz", default="UTC")
    preview.add_argument("--from", dest="start", metavar="ISO")
    preview.add_argument("--count", type=int, default=5)
    config = group(sub, "config", "KB-level settings in goalsui.yaml")
    setting = group(config, "set", "set a KB-level setting", "SETTING")
    runner = command(setting, "runner", cmd_set_runner, RUNNER_HELP)
    runner.add_argument("preset", nargs="?", help=PRESET_HELP)
    runner.add_argument("--command", metavar="ARGV", help=COMMAND_HELP)
    runner.add_argument("--model", help="a model name for the agent ({model} in a command)")
    dsub = group(sub, "db", "the database schema: status and migrations")
    upgrade = "apply schema migrations (creates the schema of an empty database)"
    command(dsub, "upgrade", cmd_upgrade, upgrade)
    command(dsub, "status", cmd_status, "the database's schema revision against this goalsui's")


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
    from goalsui.service.runner_checks import worker_warnings

    kb = KB(kb_path(args))
    warnings: list[dict[str, Any]] = []
    if not kb.exists():
        problems = [{"path": str(kb.root), "line": None, "message": "no KB folder here"}]
    else:
        service = open_service(args, sync=False)
        problems = [p.as_json() for p in service.index.doctor()]
        warnings = [w.as_json() for w in worker_warnings(service, capabilities=True)]
    ok = not problems  # warnings alone leave the exit code 0
    lines = ["ok: KB and database look healthy"] if ok else []
    for p in problems:
        where = f"{p['path']}:{p['line']}" if p["line"] else p["path"]
        lines.append(f"{where}: {p['message']}")
    lines += [f"{w['path']}: warning: {w['message']}" for w in warnings]
    answer(args, {"ok": ok, "problems": problems, "warnings": warnings}, "\n".join(lines))
    return 0 if ok else 1


def cmd_preview(args: argparse.Namespace) -> int:
    from goalsui.service.overview import schedule_preview

    result = schedule_preview(args.expression, tz=args.tz, start=args.start, count=args.count)
    return answer(args, result, "\n".join(str(item) for item in result["occurrences"]))


def cmd_set_runner(args: argparse.Namespace) -> int:
    from goalsui.service import runner_checks

    runner = runner_checks.runner_from_words(args.preset, args.command, args.model)
    service = open_service(args)
    written = runner_checks.set_default_runner(service, runner)
    lines = [f"default runner set in {service.kb.root / 'goalsui.yaml'}: {written}"]
    lines += [f"warning: {w.path}: {w.message}" for w in runner_checks.worker_warnings(service)]
    return answer(args, {"runner": written}, "\n".join(lines))


def _schema(args: argparse.Namespace, step: str) -> tuple[str, dict[str, Any]]:
    """The database's display URL and what ``service.schema.<step>()`` returns, from a service
    that does NOT check the schema on open (that is what these commands are for)."""
    from goalsui.service import Service

    try:
        service = Service(kb_path(args), *db_settings(args))
    except OSError as exc:
        raise ValidationError(f"cannot prepare the state folder: {exc}") from None
    with closing(service):
        result = getattr(service.schema, step)()
    return service.db_url_display(), result


def cmd_upgrade(args: argparse.Namespace) -> int:
    where, result = _schema(args, "upgrade")
    before, after = result["before"], result["after"]
    if before["state"] == "current":
        text = f"{where}: already at the newest schema (rev {after['head']})"
    else:
        old = ",".join(before["current"]) or "none"
        applied = ", ".join(before["pending"]) if before["state"] != "unversioned" else "stamped"
        text = f"{where}: schema upgraded from rev {old} to rev {after['head']} ({applied})"
    return answer(args, {"database": where, **result}, text)


def cmd_status(args: argparse.Namespace) -> int:
    where, result = _schema(args, "status")
    text = f"database: {where}\ncurrent:  {','.join(result['current']) or 'none'}\n"
    text += f"head:     {result['head']}\nstate:    {result['message']}"
    return answer(args, {"database": where, **result}, text)
