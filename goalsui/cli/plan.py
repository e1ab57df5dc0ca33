"""``goalsui plan``: what will fire from now until TIME, and why (a dry run)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from goalsui.cli.common import Subparsers, add_flags, add_options, command, open_service, print_json
from goalsui.domain.planned import PlannedFire, local_text, parse_until, summarise
from goalsui.domain.timeutil import load_zone

UNTIL_HELP = (
    "ISO timestamp, a duration such as 8h, or a time such as 07:30 (the next one); default 24h"
)
SHOWN_FIRES = 3  # per intent in the summary
TZ_HELP = "timezone for every time shown and for --until given as a time (default: local)"


def register(sub: Subparsers) -> None:
    p = command(
        sub, "plan", cmd_plan, "what will fire until TIME, and which rule decides each fire"
    )
    add_options(
        p,
        ("--until", str, None, "TIME", UNTIL_HELP),
        ("--goal", str, None, "G", "only this goal's intents"),
        ("--tz", str, None, "ZONE", TZ_HELP),
    )
    add_flags(p, full="list every fire instead of one line per intent")


def cmd_plan(args: argparse.Namespace) -> int:
    from goalsui.scheduler.plan import plan

    service = open_service(args)
    now = service.now()
    zone = load_zone(args.tz) if args.tz else now.astimezone().tzinfo or UTC
    until = parse_until(args.until, now, zone) if args.until else now + timedelta(hours=24)
    items = plan(service, now, until, args.goal, zone)
    if args.json:
        print_json(_json(items, now, until))
        return 0
    print(_headline(items, now, until, zone, args))
    (_print_full if args.full else _print_summary)(items, zone)
    return 0


def _json(items: list[PlannedFire], now: datetime, until: datetime) -> dict[str, Any]:
    timed = [f for f in items if f.kind != "note"]
    return {
        "from": now.isoformat(timespec="seconds"),
        "until": until.isoformat(timespec="seconds"),
        "fires": [f.as_json() for f in timed if f.kind == "fire"],
        "skipped": [f.as_json() for f in timed if f.kind == "skip"],
        "notes": [f.as_json() for f in items if f.kind == "note"],
        "warnings": [
            {key: f.as_json()[key] for key in ("at", "intent_id", "label", "warning")}
            for f in timed
            if f.warning
        ],
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _headline(
    items: list[PlannedFire], now: datetime, until: datetime, zone: tzinfo, args: argparse.Namespace
) -> str:
    fires = sum(1 for f in items if f.kind == "fire")
    conflicts = sum(1 for f in items if f.warning)
    capped = any(f.kind == "note" and f.rule.startswith("more than") for f in items)
    scope = f" for goal {args.goal}" if args.goal else ""
    zone_name = getattr(zone, "key", None) or now.astimezone(zone).tzname() or "local"
    return (
        f"Plan{scope} from {local_text(now, zone)} until {local_text(until, zone)} "
        f"({zone_name}): {'at least ' if capped else ''}{_plural(fires, 'fire')}"
        + (f", {_plural(conflicts, 'conflict')}" if conflicts else "")
    )


def _print_full(items: list[PlannedFire], zone: tzinfo) -> None:
    notes = [f for f in items if f.kind == "note"]
    timed = [f for f in items if f.kind != "note"]
    for note in notes:
        at = f" ({note.local(zone=zone)})" if note.at else ""
        print(f"  note  {note.label}: {note.rule}{at}")
    if notes:
        print()
    for item in timed:
        print(("skip  " if item.kind == "skip" else "") + item.line(zone))
        if item.warning:
            print(f"  ! {item.warning}")
    if not timed:
        print("nothing fires in this window")


def _when(at: datetime, zone: tzinfo, first: datetime | None) -> str:
    text = local_text(at, zone)
    if first is not None and at.astimezone(zone).date() == first.astimezone(zone).date():
        return text[11:16]
    return text[:16]


def _print_summary(items: list[PlannedFire], zone: tzinfo) -> None:
    rows = summarise(items)
    if not rows:
        print("nothing is scheduled")
        return
    width = max(len(r.label) for r in rows)
    print(f"{'intent'.ljust(width)}  {'fires':>5}  next fires  [schedule]")
    for row in rows:
        count = f"{len(row.fires)}{'+' if row.capped else ''}" if row.fires else "-"
        first = row.fires[0] if row.fires else None  # the next fires' dates are said after it
        shown = [
            _when(at, zone, first if i else None) for i, at in enumerate(row.fires[:SHOWN_FIRES])
        ]
        tail = ", …" if len(row.fires) > SHOWN_FIRES else ""
        nexts = ", ".join(shown) + tail if shown else "-"
        print(f"{row.label.ljust(width)}  {count:>5}  {nexts}  [{row.rule or 'no fire'}]".rstrip())
        extra = row.notes[:1]
        if row.skipped:
            extra.append(f"{_plural(row.skipped, 'tick')} {row.skip_reason}")
        if row.conflicts:
            c = row.conflicts[0]
            more = f" ({len(row.conflicts) - 1} more)" if len(row.conflicts) > 1 else ""
            extra.append(f"! {_when(c.at, zone, None) if c.at else ''} {c.warning}{more}")
        for text in extra:
            print(f"{''.ljust(width)}  {'':>5}  {text}")
    print("(--full lists every fire)")
