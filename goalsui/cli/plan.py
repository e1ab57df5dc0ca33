"""``goalsui plan``: what will fire from now until TIME, and why (a dry run)."""

from __future__ import annotations

import argparse
from datetime import UTC, timedelta

from goalsui.cli.common import add_json, open_service, print_json
from goalsui.domain.timeutil import load_zone


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="what will fire until TIME, and which rule decides each fire")
    p.add_argument(
        "--until",
        metavar="TIME",
        help="ISO timestamp, a duration such as 8h, or a time such as 07:30 (the next one); default 24h",
    )
    p.add_argument("--goal", metavar="G", help="only this goal's intents")
    p.add_argument(
        "--tz", metavar="ZONE", help="timezone for --until given as a time or naive timestamp"
    )
    add_json(p)
    p.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from goalsui.scheduler.plan import _local_text, parse_until, plan

    service = open_service(args)
    now = service.now()
    tz = load_zone(args.tz) if args.tz else None
    until = parse_until(args.until, now, tz) if args.until else now + timedelta(hours=24)
    items = plan(service, now, until, args.goal)
    notes = [f for f in items if f.kind == "note"]
    timed = [f for f in items if f.kind != "note"]
    warnings = [f for f in timed if f.warning]
    if args.json:
        print_json(
            {
                "from": now.isoformat(timespec="seconds"),
                "until": until.isoformat(timespec="seconds"),
                "fires": [f.as_json() for f in timed if f.kind == "fire"],
                "skipped": [f.as_json() for f in timed if f.kind == "skip"],
                "notes": [f.as_json() for f in notes],
                "warnings": [
                    {
                        "at": f.at.isoformat(timespec="seconds") if f.at else None,
                        "intent_id": f.intent_id,
                        "label": f.label,
                        "warning": f.warning,
                    }
                    for f in warnings
                ],
            }
        )
        return 0
    zone = tz or now.astimezone().tzinfo or UTC
    fires = sum(1 for f in timed if f.kind == "fire")
    scope = f" for goal {args.goal}" if args.goal else ""
    print(
        f"Plan{scope} from {_local_text(now, zone)} until {_local_text(until, zone)}: "
        f"{fires} fire{'s' if fires != 1 else ''}"
        + (
            f", {len(warnings)} overlap warning{'s' if len(warnings) != 1 else ''}"
            if warnings
            else ""
        )
    )
    for note in notes:
        print(f"  note  {note.label}: {note.rule}" + (f" ({note.local()})" if note.at else ""))
    if notes:
        print()
    pairs: dict[tuple[int, int | None], int] = {}
    for item in warnings:
        key = (item.intent_id, item.overlaps_with)
        pairs[key] = pairs.get(key, 0) + 1
    shown: set[tuple[int, int | None]] = set()
    for item in timed:
        print(("skip  " if item.kind == "skip" else "") + item.line())
        if item.warning:
            key = (item.intent_id, item.overlaps_with)
            if key not in shown:
                shown.add(key)
                more = pairs[key] - 1
                print(f"  ! {item.warning}" + (f" (and {more} more like this)" if more else ""))
    if not timed:
        print("nothing fires in this window")
    return 0
