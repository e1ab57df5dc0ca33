"""``goalsui report [GOAL] [--date YYYY-MM-DD] [--write]``, read-only by default; ``--date`` is the
night's start (read on the 4th: the 3rd)."""

from __future__ import annotations

import argparse
from datetime import date
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import Subparsers, add_flags, answer, command, open_service, table
from goalsui.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from goalsui.kb.reports import StoredReport
    from goalsui.service import Service

REPORT_HELP = "print a goal's morning report (compiled if missing), or list the reports"
REPORT_ABOUT = (
    "A night is named by the date it starts: it runs from 12:00 on that date to "
    "12:00 the next day in the goal's timezone, so the report read on the morning "
    "of the 4th is the night of the 3rd (reports/2026-12-03.md). With GOAL: print "
    "the report of the night under way (before noon, the one ending this morning), "
    "compiled now from its start up to now; with --date, the stored report of the "
    "night that started on that date (compiled when there is none). Nothing is "
    "written into the KB unless --write is given. Without GOAL: list the reports of "
    "every goal that has a reporter or reports."
)
WRITE_HELP = "compile the report now and write it into the goal's reports/ (overwrites it)"


def register(sub: Subparsers) -> None:
    p = command(sub, "report", cmd_report, REPORT_HELP, description=REPORT_ABOUT)
    p.add_argument("goal", nargs="?", metavar="GOAL")
    date_help = "the night, named by the date it starts (the morning's report is the day before)"
    p.add_argument("--date", metavar="YYYY-MM-DD", help=date_help)
    p.add_argument("--write", "--build", dest="write", action="store_true", help=WRITE_HELP)
    add_flags(p, list="list GOAL's reports instead of printing one")


def _day(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(f"invalid --date {text!r}: use YYYY-MM-DD") from None


def cmd_report(args: argparse.Namespace) -> int:
    service = open_service(args)
    day = _day(args.date)
    if not args.goal:
        return _list_all(args, service, day)
    service.goals.get(args.goal)
    if args.list:
        return _list_goal(args, service)
    return _print_report(args, service, day)


def _report_json(report: StoredReport) -> dict[str, Any]:
    night = report.night.isoformat()
    return {"night": night, "date": night, "path": str(report.path), "size": report.size}


def _list_all(args: argparse.Namespace, service: Service, day: date | None) -> int:
    """Without GOAL: every goal that has a reporter or reports, and its reports."""
    from goalsui.runners.report import list_reports

    rows = []
    data = []
    for goal in service.goals.list():
        reporter = any((w.runner or {}).get("builtin") == "report" for w in goal.workers)
        try:
            reports = list_reports(service, goal.goal_id)
        except NotFound:
            continue
        if not reporter and not reports:
            continue
        if day is not None:
            reports = [r for r in reports if r.night == day]
        shown = [_report_json(r) for r in reports]
        data.append(
            {"goal_id": goal.goal_id, "name": goal.name, "reporter": reporter, "reports": shown}
        )
        latest = [shown[-1]["night"], shown[-1]["path"]] if shown else ["-", "-"]
        rows.append([goal.goal_id, "yes" if reporter else "no", len(reports), *latest])
    headers = ["goal", "reporter", "reports", "latest night", "path"]
    return answer(args, data, table(rows, headers, "no goal has a reporter or reports"))


def _list_goal(args: argparse.Namespace, service: Service) -> int:
    """``report GOAL --list``: that goal's stored reports."""
    from goalsui.runners.report import list_reports

    reports = list_reports(service, args.goal)
    rows = [[r.night.isoformat(), r.size, str(r.path)] for r in reports]
    text = table(rows, ["night", "bytes", "path"], f"goal {args.goal} has no reports yet")
    return answer(args, [_report_json(r) for r in reports], text)


def _print_report(args: argparse.Namespace, service: Service, day: date | None) -> int:
    """``report GOAL``: the stored report of --date, else one compiled now."""
    from goalsui.runners.report import compile_report, list_reports

    reports = list_reports(service, args.goal)
    # --write compiles anew; without --date (day None) no stored night matches
    chosen = None if args.write else next((r for r in reports if r.night == day), None)
    if chosen is not None:
        path, night, compiled = chosen.path, chosen.night, False
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        report = compile_report(
            service, args.goal, day, service.now(), write=args.write, to_now=day is None
        )
        path, night, compiled, text = report.path, report.night, True, report.markdown
    shown = {"goal_id": args.goal, "night": night.isoformat(), "date": night.isoformat()}
    data = {**shown, "path": str(path), "compiled": compiled, "written": bool(args.write)}
    return answer(args, {**data, "markdown": text}, text.removesuffix("\n"))
