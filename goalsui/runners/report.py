"""The builtin ``report`` runner: the nightshift morning report of one goal. Every statement names
its source. Blocking: call :func:`compile_report` through ``asyncio.to_thread``."""

from __future__ import annotations

import contextlib
import difflib
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.domain.durations import format_duration
from goalsui.domain.nightshift import night_of, night_window, report_file, report_heading
from goalsui.domain.states import FAILURE_RUNS, IntentStatus, RunStatus
from goalsui.domain.timeutil import load_zone
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.kb import reports as stored
from goalsui.kb.atomic import atomic_write
from goalsui.kb.reports import SNAPSHOT_DIR
from goalsui.runners.deliver import OUTBOX_NAME, headline
from goalsui.runners.nightshift_report import nightshift_actions, nightshift_section
from goalsui.runners.report_cost import cell, cost_lines, cost_summary, run_ids
from goalsui.store.models import Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service


SNAPSHOT_FILES = ("state.yaml", "protocol.md")
STATUS_ORDER = sorted(RunStatus, key=lambda s: s == RunStatus.RUNNING)  # running last
PROBLEM_STATUSES = FAILURE_RUNS | {RunStatus.CANCELLED, RunStatus.MISSED}
FINDING_LINES = 10
ERROR_LINES = 10
MAX_DIFF_LINES = 200
_LOG_RUN = re.compile(r"\brun (\d+)\b")


@dataclass
class RunEntry:
    """One run of the night and where each fact about it comes from."""

    run: IntentRun
    intent: Intent
    label: str
    outbox: str | None = None  # relative to the goal dir
    goal_log: str | None = None  # "log/2026-12-02.md:7"
    run_log: str | None = None  # "42.log:12" (the line of the error)
    error_tail: list[str] = field(default_factory=list)
    finding: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        unrun = self.run.status in (RunStatus.SKIPPED, RunStatus.MISSED)
        record = "scheduler record" if unrun else "run record"
        return f"run {self.run.id}, {self.outbox or self.run_log or self.goal_log or record}"


@dataclass
class NightReport:
    night: date  # the night's start date (the file's name)
    path: Path
    markdown: str
    summary: str


def report_timezone(service: Service, goal_id: str) -> str:
    """The reporter worker's timezone, else the goal's first worker's, else UTC."""
    intents = service.intents.list(goal_id=goal_id)
    reporters = [i for i in intents if (i.runner or {}).get("builtin") == "report"]
    zones = [i.timezone for i in reporters + [i for i in intents if i.worker] if i.timezone]
    return zones[0] if zones else "UTC"


def report_instant(service: Service, run_id: int | None, now: datetime) -> datetime:
    """The instant picking the report's night: its run's due time, else ``now``."""
    if run_id is not None:
        with contextlib.suppress(GoalsuiError):  # a run deleted meanwhile
            run = service.runs.get(run_id)
            return run.planned_at or run.started_at or now
    return now


def _fmt(dt: datetime | None, zone: tzinfo) -> str:
    return dt.astimezone(zone).strftime("%H:%M:%S") if dt else "-"


def _duration(run: IntentRun) -> str:
    if run.finished_at is None or run.started_at is None:
        return "-"
    seconds = (run.finished_at - run.started_at).total_seconds()
    return f"{seconds:.1f}s" if seconds < 60 else format_duration(timedelta(seconds=seconds))


def _fence(lines: list[str], lang: str = "") -> str:
    text = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _label(intent: Intent) -> str:
    return intent.worker or f"intent {intent.id} ({plain(intent.title, limit=40)})"


def _outbox_map(goal_dir: Path, workers: set[str]) -> dict[int, str]:
    found: dict[int, str] = {}
    for worker in workers:
        for entry in (goal_dir / "workers" / worker / "outbox").glob("*.md"):  # none: no folder
            if match := OUTBOX_NAME.match(entry.name):
                found[int(match.group(2))] = f"workers/{worker}/outbox/{entry.name}"
    return found


def _goal_log_refs(
    goal_dir: Path, start: datetime, end: datetime, wanted: set[int]
) -> dict[int, str]:
    """The first goal-log line that names each run (``log/YYYY-MM-DD.md:N``)."""
    refs: dict[int, str] = {}
    day = (start - timedelta(days=1)).date()
    while day <= end.date() + timedelta(days=1):
        path = goal_dir / "log" / f"{day:%Y-%m-%d}.md"
        with contextlib.suppress(OSError):  # a day without a log
            for number, line in enumerate(path.read_text("utf-8", "replace").splitlines(), 1):
                match = _LOG_RUN.search(line)
                if match and int(match.group(1)) in wanted:
                    refs.setdefault(int(match.group(1)), f"log/{path.name}:{number}")
        day += timedelta(days=1)
    return refs


def _run_log(run: IntentRun) -> tuple[str | None, list[str]]:
    """The run log's error line (``<id>.log:N``) and its last output lines."""
    if not run.output_path:
        return None, []
    path = Path(run.output_path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        tail = (run.output_tail or "").splitlines()[-ERROR_LINES:]
        return None, [plain(x, limit=300) for x in tail]
    output = [(n, x) for n, x in enumerate(lines, 1) if not x.startswith("[goalsui]")]
    pick = next(
        (n for n, x in reversed(output) if x.startswith("[stderr]") and x[8:].strip()), None
    )
    if pick is None:
        pick = output[-1][0] if output else (len(lines) or None)
    ref = f"{path.name}:{pick}" if pick else path.name
    return ref, [plain(x, limit=300) for _, x in output[-ERROR_LINES:]]


def _finding(goal_dir: Path, rel: str) -> list[str]:
    try:
        text = (goal_dir / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    lines = [plain(x, limit=300) for x in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines[: FINDING_LINES + 1]


def _diff_section(goal_dir: Path, night: date) -> list[str]:
    snapshots = stored.snapshot_dirs(goal_dir)
    earlier = [d for d in sorted(snapshots) if d < night]
    out = ["## Changes to state.yaml and protocol.md", ""]
    if not earlier:
        out.append(
            f"No earlier snapshot: this is the first report of this goal. The next report diffs "
            f"against `reports/{SNAPSHOT_DIR}/{night.isoformat()}/` (source: state.yaml, protocol.md)."
        )
        return out
    base = earlier[-1]
    folder = snapshots[base]
    for name in SNAPSHOT_FILES:
        paths = (folder / name, goal_dir / name)
        old, new = (p.read_text("utf-8", "replace") if p.is_file() else "" for p in paths)
        snap = f"reports/{SNAPSHOT_DIR}/{folder.name}/{name}"
        if old == new:
            out.append(
                f"- `{name}`: unchanged since the report of the night of {base} "
                f"(source: {name} vs {snap})."
            )
            continue
        diff = list(
            difflib.unified_diff(
                old.splitlines(), new.splitlines(), fromfile=snap, tofile=name, lineterm=""
            )
        )
        added = sum(1 for x in diff if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in diff if x.startswith("-") and not x.startswith("---"))
        out.append(
            f"- `{name}`: +{added} −{removed} lines since the report of the night of {base} "
            f"(source: {name} vs {snap}):"
        )
        out.append("")
        shown = [plain(x, limit=300) for x in diff[:MAX_DIFF_LINES]]
        if len(diff) > MAX_DIFF_LINES:
            shown.append(f"… ({len(diff) - MAX_DIFF_LINES} more diff lines)")
        out += [_fence(shown, "diff"), ""]
    return out


def _disabled_section(service: Service, goal_id: str) -> list[str]:
    """The goal's auto-disabled intents: nothing fires until the operator resumes them."""
    disabled = [i for i in service.intents.list(goal_id=goal_id) if i.status == IntentStatus.FAILED]
    if not disabled:
        return []
    lines = ["## Auto-disabled", ""]
    for intent in disabled:
        lines.append(
            f"- {plain(_label(intent), limit=80)} is auto-disabled after "
            f"{intent.consecutive_failures} consecutive failures: "
            f"{plain(intent.last_error or 'no error recorded', limit=300)} "
            f"(source: goalsui database, intent {intent.id}; resume with "
            f"'goalsui intent resume {intent.id}')."
        )
    return [*lines, ""]


def _collect(
    service: Service,
    goal_id: str,
    goal_dir: Path,
    start: datetime,
    end: datetime,
    exclude_run_id: int | None,
) -> list[RunEntry]:
    intents = {i.id: i for i in service.intents.list(goal_id=goal_id)}
    runs: list[tuple[IntentRun, Intent]] = []
    for intent in intents.values():
        for run in service.runs.list(
            intent_id=intent.id, since=start - timedelta(days=1), limit=100_000
        ):
            if run.id == exclude_run_id:
                continue
            if start <= run.started_at <= end or (
                run.planned_at and start <= run.planned_at <= end
            ):
                runs.append((run, intent))
    runs.sort(key=lambda pair: (pair[0].planned_at or pair[0].started_at, pair[0].id or 0))
    outboxes = _outbox_map(goal_dir, {i.worker for _, i in runs if i.worker})
    log_refs = _goal_log_refs(goal_dir, start, end, {r.id for r, _ in runs if r.id is not None})
    entries = []
    for run, intent in runs:
        key = run.id or -1
        entry = RunEntry(run, intent, _label(intent), outboxes.get(key), log_refs.get(key))
        if run.status in PROBLEM_STATUSES or (run.status == RunStatus.OK and not entry.outbox):
            entry.run_log, entry.error_tail = _run_log(run)
        if entry.outbox:
            entry.finding = _finding(goal_dir, entry.outbox)
        entries.append(entry)
    return entries


@dataclass(frozen=True)
class _Night:
    """The night a report is about: its goal, window and runs, and how times are shown."""

    service: Service
    goal_id: str
    name: str  # the goal's name
    night: date  # the night's start date
    tz: str
    zone: tzinfo
    now: datetime
    start: datetime
    end: datetime
    compiled_by: int | None  # the report's own run
    entries: list[RunEntry]

    @property
    def problems(self) -> list[RunEntry]:
        return [e for e in self.entries if e.run.status in PROBLEM_STATUSES]

    def count_text(self) -> str:
        """``3 ok (runs 1, 2, 4), 1 failed (run 3)``, in STATUS_ORDER."""
        ids: dict[str, list[int | None]] = {}
        for e in self.entries:
            ids.setdefault(str(e.run.status), []).append(e.run.id)
        return ", ".join(f"{len(ids[s])} {s} ({run_ids(ids[s])})" for s in STATUS_ORDER if s in ids)


def compile_report(
    service: Service,
    goal_id: str,
    night: date | None = None,
    now: datetime | None = None,
    *,
    tz: str | None = None,
    exclude_run_id: int | None = None,
    write: bool = True,
    to_now: bool = False,
) -> NightReport:
    """Compile (and write) ``goal_id``'s report of ``night`` (default: the due time's night)."""
    view = service.goals.get(goal_id)
    goal_dir = service.kb.goal_dir(goal_id)
    tz = tz or report_timezone(service, goal_id)
    zone = load_zone(tz)
    now = now or service.now()
    night = night or night_of(report_instant(service, exclude_run_id, now), zone)
    start, end = night_window(night, zone)
    end = now if to_now else min(now, end)  # the night up to now (to its end, unless to_now)
    if end <= start:
        raise ValidationError(
            f"no report for the night of {night} yet: a night is named by the date it starts, "
            f"and this one starts {start.astimezone(zone):%Y-%m-%d %H:%M %Z}"
        )
    entries = _collect(service, goal_id, goal_dir, start, end, exclude_run_id)
    about = _Night(
        service, goal_id, view.name, night, tz, zone, now, start, end, exclude_run_id, entries
    )
    markdown = _markdown(about, goal_dir)
    path = goal_dir / "reports" / report_file(night)
    if write:
        stored.migrate_reports(goal_dir)
        atomic_write(path, markdown)
        snapshot = goal_dir / "reports" / SNAPSHOT_DIR / night.isoformat()  # the next diff's base
        for name in SNAPSHOT_FILES:
            if (goal_dir / name).is_file():
                atomic_write(snapshot / name, (goal_dir / name).read_bytes())
    return NightReport(night, path, markdown, _summary_text(about))


def _markdown(night: _Night, goal_dir: Path) -> str:
    """The report's text, section by section."""
    service, goal_id = night.service, night.goal_id
    lines = _head(night) + _summary_section(night)
    lines += [""] + cost_lines(
        service, goal_id, night.entries, (night.start, night.end), night.zone
    )
    lines += _timeline_section(night)
    lines += _findings_section(night.entries)
    lines += _failures_section(night.problems)
    lines += _disabled_section(service, goal_id)
    lines += nightshift_section(service, goal_id, night.night, night.start)
    lines += _diff_section(goal_dir, night.night)
    lines += _owner_section(night)
    return "\n".join(lines).rstrip() + "\n"


def _head(night: _Night) -> list[str]:
    """The title, and the window and sources of the report."""
    zone = night.zone
    return [
        report_heading(plain(night.name, limit=80), night.night),
        "",
        f"From {night.start.astimezone(zone):%Y-%m-%d %H:%M} to {night.end.astimezone(zone):%Y-%m-%d %H:%M} "
        f"({night.tz}); compiled {night.now.astimezone(zone):%Y-%m-%d %H:%M %z}"
        + (f" by run {night.compiled_by}" if night.compiled_by else "")
        + ". Sources: run ids from the goalsui database; files relative to the goal directory; "
        f"run logs in `{night.service.runs_dir}`.",
    ]


def _summary_section(night: _Night) -> list[str]:
    """Counts per status, the share of good ticks, the one thing to know, the cost."""
    entries, problems = night.entries, night.problems
    lines = ["", "## Summary", ""]
    if not entries:
        lines.append(
            "- No runs of this goal's workers in the window (source: goalsui database, intent_run)."
        )
        return lines
    lines.append(f"- {len(entries)} runs: {night.count_text()}.")
    unfinished = (RunStatus.SKIPPED, RunStatus.MISSED, RunStatus.RUNNING)
    finished = [e for e in entries if e.run.status not in unfinished]
    good = [e for e in finished if e.run.status in (RunStatus.OK, RunStatus.SILENT)]
    if finished:
        good_ids = ", ".join(str(e.run.id) for e in good) or "none"
        lines.append(
            f"- {len(good)} of {len(finished)} finished ticks ended ok or silent "
            f"({100 * len(good) // len(finished)} %) (runs {good_ids})."
        )
    if problems:
        first = problems[0]
        lines.append(
            f"- Most important: {first.label} {first.run.status}: {plain(first.run.reason or 'no reason recorded', limit=200)} "
            f"({first.source})."
        )
    else:
        top = next((e for e in entries if e.finding), None)
        if top is not None:
            head = headline("\n".join(top.finding))
            if not head.lower().startswith(top.label.lower()):
                head = f"{top.label}: {head}"
            lines.append(f"- Headline: {head} ({top.source}).")
    lines.append(cost_summary(entries))
    return lines


def _timeline_section(night: _Night) -> list[str]:
    """One table row per run: planned and actual start, duration, status, source."""
    lines = ["## Timeline", ""]
    if not night.entries:
        lines.append("No runs (source: goalsui database, intent_run).")
        return lines
    zone = night.zone
    lines.append("| worker | run | trigger | planned | started | duration | status | source |")
    lines.append("| --- | ---: | --- | --- | --- | ---: | --- | --- |")
    for e in night.entries:
        r = e.run
        status = str(r.status) + (
            f": {cell(r.reason)}" if r.reason and r.status != RunStatus.OK else ""
        )
        lines.append(
            f"| {cell(e.label)} | {r.id} | {r.trigger} | {_fmt(r.planned_at, zone)} | "
            f"{_fmt(r.started_at, zone)} | {_duration(r)} | {status} | {cell(e.source)} |"
        )
    return lines


def _findings_section(entries: list[RunEntry]) -> list[str]:
    """What each ok or silent run delivered (quoted from its outbox file)."""
    lines = ["", "## Findings", ""]
    delivered = [e for e in entries if e.run.status in (RunStatus.OK, RunStatus.SILENT)]
    for e in delivered:
        label = plain(e.label, limit=80)
        silent = e.run.status == RunStatus.SILENT
        if e.finding and not silent:
            lines += [f"### {label} (run {e.run.id}, {e.outbox})", ""]
            lines.extend(f"> {x}" if x else ">" for x in e.finding[:FINDING_LINES])
            if len(e.finding) > FINDING_LINES:
                lines.append(f"> … (more in {e.outbox})")
            lines.append("")
            continue
        where = e.goal_log or ("silent token" if silent else e.run_log or "no output")
        said = "Silent: nothing to report" if silent else "Ok without output"
        lines += [f"### {label} (run {e.run.id}, {where})", ""]
        lines += [f"{said} (run {e.run.id}, {where}).", ""]
    if not delivered:
        lines += ["No findings: no run delivered a result in the window.", ""]
    return lines


def _failures_section(problems: list[RunEntry]) -> list[str]:
    """Each failed run: its reason, source and last lines of output."""
    if not problems:
        return []
    lines = ["## Failures", ""]
    for e in problems:
        r = e.run
        exit_said = r.exit_code is None or (r.reason or "").startswith("exit ")
        code = "" if exit_said else f" (exit {r.exit_code})"
        reason = plain(r.reason or "no reason recorded", limit=300)
        lines.append(
            f"- {plain(e.label, limit=80)}, run {r.id}, {r.status}{code}: {reason} ({e.source})"
        )
        if e.error_tail:
            lines += ["", f"  Last lines of {e.run_log or 'the run output'}:", ""]
            lines.extend("  " + x for x in _fence(e.error_tail).splitlines())
        lines.append("")
    return lines


def _owner_section(night: _Night) -> list[str]:
    """What the owner should look at: up to three failing workers, or nothing."""
    lines = ["", "## For the owner", ""]
    problems = night.problems
    actions = nightshift_actions(night.service, night.goal_id, night.night)
    if not problems and not actions:
        n = len(night.entries)
        lines.append(
            f"- Nothing to act on: {n} run{'s' if n != 1 else ''}, none failed, nothing waits "
            "for approval (source: the timeline above)."
        )
        return lines
    lines += actions
    seen: set[str] = set()
    for e in problems:
        if e.label in seen or len(seen) >= 3:
            continue
        seen.add(e.label)
        where = (
            f"workers/{e.intent.worker}/prompt.md" if e.intent.worker else f"intent {e.intent.id}"
        )
        lines.append(
            f"- Look at {e.label} ({where}): {e.run.status}: {plain(e.run.reason or '-', limit=160)} ({e.source})."
        )
    return lines


def _summary_text(night: _Night) -> str:
    """The few lines a report run leaves in its log and on the console."""
    entries = night.entries
    lines = [
        f"{plain(night.name, limit=80)} report, night of {night.night.isoformat()}: "
        + (f"{len(entries)} runs: {night.count_text()}." if entries else "no runs in the window.")
    ]
    for e in night.problems[:5]:
        lines.append(
            f"- {e.label} run {e.run.id} {e.run.status}: {plain(e.run.reason or '-', limit=160)} ({e.source})"
        )
    lines.append(f"Report: reports/{report_file(night.night)}")
    return "\n".join(lines) + "\n"


def list_reports(service: Service, goal_id: str) -> list[stored.StoredReport]:
    """The goal's reports, one per night, oldest first."""
    return stored.stored_reports(service.kb.goal_dir(goal_id))
