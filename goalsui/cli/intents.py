"""``goalsui intent ...`` and ``goalsui runs``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from goalsui.cli.common import (
    Subparsers,
    add_flags,
    answer,
    command,
    group,
    local,
    open_service,
    parse_id,
    positive_count,
    print_json,
    read_text_arg,
    table,
)
from goalsui.domain.budget import format_tokens, format_usd
from goalsui.domain.records import RunRecord
from goalsui.domain.shapes import intent_json, run_json
from goalsui.domain.transcript import format_transcript
from goalsui.errors import ValidationError

VERBS = "show: one run's transcript; stop: stop a running run (the schedule goes on); retry: start an interrupted run's intent again now; dismiss: resume its schedule from now without re-running it"
RUNS_HELP = (
    "list runs (newest first); 'runs show ID' prints one run's transcript; "
    "'runs stop ID' stops one running run and keeps the schedule; "
    "'runs retry|dismiss ID' decides a run that needs review"
)


def register(sub: Subparsers) -> None:
    isub = group(sub, "intent", "persisted future wake-ups")
    add = command(isub, "add", cmd_add, "create an intent")
    add.add_argument("--title", required=True)
    add.add_argument("--instruction", required=True, help="text, @FILE or - for stdin")
    when = add.add_mutually_exclusive_group(required=True)
    for flag, meta, text in (
        ("--at", "ISO", "fire once at this instant"),
        ("--cron", "EXPR", "fire on a cron schedule"),
        ("--every", "DURATION", "heartbeat interval, e.g. 30m"),
        ("--event", "SOURCE", "fire on events from SOURCE"),
    ):
        when.add_argument(flag, metavar=meta, help=text)
    for flag, meta, text in (
        ("--thread", "ID", "destination thread"),
        ("--goal", "GOAL", "destination goal (its log)"),
        ("--tz", "TZ", "IANA timezone of --cron (default UTC), --at/--expires without an offset"),
        ("--key", "OPKEY", "idempotency key: an existing intent is returned"),
        ("--expires", "ISO", "no fires after this instant"),
        ("--cooldown", "DURATION", "minimum time between event fires"),
        ("--filter", "JSON", "event filter: a JSON object matched as a subset"),
        ("--checklist", "TEXT", "heartbeat checklist: text, @FILE or - (empty: every tick skips)"),
        ("--active-hours", "HH:MM-HH:MM", "heartbeat active hours, in --tz"),
    ):
        add.add_argument(flag, metavar=meta, help=text)
    add.add_argument("--max-fires", type=positive_count, metavar="N")
    lst = command(isub, "list", cmd_list, "list intents")
    lst.add_argument("--status")
    lst.add_argument("--goal")
    for action, help_text in (
        ("show", "show one intent and its recent runs"),
        ("pause", "stop future fires"),
        ("resume", "resume, planned from now (also reinstates an ended schedule)"),
        ("cancel", "end the schedule and stop its running process ('resume' reinstates it)"),
        ("run-now", "fire once now"),
        ("retry", "retry a failed intent now, failure count reset"),
    ):
        command(isub, action, cmd_action, help_text, "intent_id").set_defaults(action=action)
    runs = command(sub, "runs", cmd_runs, RUNS_HELP)
    runs.add_argument("verb", nargs="?", choices=["show", "stop", "retry", "dismiss"], help=VERBS)
    runs.add_argument("run_id", nargs="?", help="the run to show, stop, retry or dismiss")
    add_flags(runs, failed="failed, timed-out, interrupted and missed runs")
    runs.add_argument("--intent", metavar="ID")
    runs.add_argument("--limit", type=int, default=50)


def cmd_add(args: argparse.Namespace) -> int:
    from goalsui.domain.intent_spec import IntentSpec
    from goalsui.kb.config import active_hours_from_range

    kinds = (("at", args.at), ("cron", args.cron), ("heartbeat", args.every), ("event", None))
    kind, schedule = next((k, when) for k, when in kinds if when or k == "event")
    hours = (
        active_hours_from_range(args.active_hours, args.tz or "UTC") if args.active_hours else None
    )
    event_filter = None
    if args.filter:
        try:
            event_filter = json.loads(args.filter)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"invalid --filter JSON: {exc.msg} at column {exc.colno}"
            ) from None
        except RecursionError:
            raise ValidationError("--filter is nested too deeply") from None
    spec = IntentSpec.parse(
        title=args.title,
        instruction=read_text_arg(args.instruction),
        kind=kind,
        schedule=schedule,
        timezone=args.tz,
        thread_id=parse_id(args.thread, "thread") if args.thread else None,
        goal_id=args.goal,
        operation_key=args.key,
        max_fires=args.max_fires,
        expires_at=args.expires,
        cooldown=args.cooldown,
        event_source=args.event,
        event_filter=event_filter,
        checklist=read_text_arg(args.checklist) if args.checklist is not None else None,
        active_hours=hours,
    )
    intent = open_service(args).intents.save(spec)
    text = f"intent {intent.id}: {intent.title} [{intent.kind} {intent.schedule or intent.event_source}] next {local(intent.next_run_at)}"
    return answer(args, intent_json(intent.record()), text)


def cmd_list(args: argparse.Namespace) -> int:

    intents = open_service(args).intents.list(status=args.status, goal_id=args.goal)
    rows = [
        [
            i.id,
            i.title[:40],
            i.kind,
            i.status,
            i.schedule or i.event_source or "",
            local(i.next_run_at),
            i.consecutive_failures,
        ]
        for i in intents
    ]
    headers = ["id", "title", "kind", "status", "schedule", "next run", "fails"]
    text = table(rows, headers, "no intents")
    return answer(args, [intent_json(i.record()) for i in intents], text)


def cmd_action(args: argparse.Namespace) -> int:
    service = open_service(args)
    intent_id = parse_id(args.intent_id, "intent")
    action = args.action
    if action == "show":
        data = intent_json(service.intents.get(intent_id).record())
        runs = service.runs.list(intent_id=intent_id, limit=10)
        lines = [f"{key:22} {'-' if value is None else value}" for key, value in data.items()]
        lines += ["", _runs_table([r.record() for r in runs])] if runs else []
        text = "\n".join(lines)
        return answer(args, {**data, "runs": [run_json(r.record()) for r in runs]}, text)
    intent = getattr(service.intents, action.replace("-", "_"))(intent_id)
    text = f"intent {intent.id}: {intent.status}, next {local(intent.next_run_at)}"
    return answer(args, intent_json(intent.record()), text)


def _runs_table(runs: list[RunRecord]) -> str:
    rows = [
        [
            r.id,
            r.intent_id,
            r.attempt,
            r.trigger,
            r.status_label,
            (r.reason or "")[:50],
            local(r.started_at),
            r.exit_code if r.exit_code is not None else "",
            format_usd(r.cost_usd),
            format_tokens(_tokens(r)),
        ]
        for r in runs
    ]
    headers = ["run", "intent", "try", "trigger", "status", "reason", "started", "exit", "cost"]
    return table(rows, [*headers, "tokens"])


def _tokens(run: Any) -> int | None:
    if run.tokens_in is None and run.tokens_out is None:
        return None
    return int(run.tokens_in or 0) + int(run.tokens_out or 0)


def cmd_runs(args: argparse.Namespace) -> int:
    if args.verb is not None:
        if args.run_id is None:
            raise ValidationError(f"runs {args.verb} needs a run id")
        verbs = {"show": _show_run, "stop": _stop_run, "retry": _decide, "dismiss": _decide}
        return verbs[args.verb](args, parse_id(args.run_id, "run"))
    if args.run_id is not None:
        raise ValidationError("a run id goes with 'runs show|stop|retry|dismiss ID'")
    runs = open_service(args).runs.list(
        failed=args.failed,
        intent_id=parse_id(args.intent, "intent") if args.intent else None,
        limit=args.limit,
    )
    text = _runs_table([r.record() for r in runs]) if runs else "no runs"
    return answer(args, [run_json(r.record()) for r in runs], text)


def _decide(args: argparse.Namespace, run_id: int) -> int:
    """``goalsui runs retry|dismiss ID``: the operator's decision on a run awaiting review."""
    service = open_service(args)
    if args.verb == "retry":
        intent = service.runs.review_retry(run_id)
        done = f"run {run_id}: retried, intent {intent.id} fires again now"
    else:
        intent = service.runs.review_dismiss(run_id)
        done = (
            f"run {run_id}: dismissed, intent {intent.id} {intent.status}, "
            f"next {local(intent.next_run_at)}"
        )
    return answer(
        args,
        {"run_id": run_id, "decision": args.verb, "intent": intent_json(intent.record())},
        done,
    )


def _stop_run(args: argparse.Namespace, run_id: int) -> int:
    """``goalsui runs stop ID``: the scheduler running it stops it; the schedule goes on."""
    run = open_service(args).runs.stop(run_id)
    text = (
        f"run {run.id}: stop requested; the scheduler running it stops it "
        "(SIGTERM, then SIGKILL) and the schedule goes on"
    )
    return answer(args, run_json(run.record()), text)


def _show_run(args: argparse.Namespace, run_id: int) -> int:
    """``goalsui runs show ID``: prompt, argv, tool calls and output of one run."""
    transcript = open_service(args, sync=False).agents.transcript(run_id)
    if args.json:
        print_json(transcript)
    else:
        sys.stdout.write(format_transcript(transcript))
    return 0
