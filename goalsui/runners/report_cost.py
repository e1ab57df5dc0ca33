"""The morning report's cost section: per worker, per night, and the top spenders. Runs that
reported nothing count as ``unknown``, never as zero cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

from goalsui.domain.budget import format_tokens, format_usd
from goalsui.domain.states import EXECUTED_RUNS
from goalsui.domain.untrusted import plain
from goalsui.store.models import IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service


NIGHTS = 7  # nights shown in the history, this one included
TOP = 3  # runs named as the top spenders


class _Entry(Protocol):
    run: IntentRun
    label: str


@dataclass
class _Tally:
    usd: float = 0.0
    tokens: int = 0
    runs: int = 0
    unknown: int = 0

    def add(self, run: IntentRun) -> None:
        if run.cost_usd is None and run.tokens_in is None and run.tokens_out is None:
            if run.status in EXECUTED_RUNS:
                self.unknown += 1
            return
        self.runs += 1
        self.usd += run.cost_usd or 0.0
        self.tokens += (run.tokens_in or 0) + (run.tokens_out or 0)

    def usd_text(self) -> str:
        return format_usd(self.usd) if self.runs else "unknown"


def cell(text: object, limit: int = 120) -> str:
    """Text for a Markdown table cell: plain, one line, its pipes escaped."""
    return plain(str(text), limit=limit).replace("|", "\\|").replace("\n", " ")


def run_ids(ids: Sequence[int | None]) -> str:
    """``run 4`` or ``runs 1, 2, 4``: where a report's statement comes from."""
    return ("run " if len(ids) == 1 else "runs ") + ", ".join(str(i) for i in ids)


def cost_summary(entries: Sequence[_Entry]) -> str:
    """One summary line: the night's reported cost and how many runs did not say."""
    total = _Tally()
    for e in entries:
        total.add(e.run)
    unknown = f"; {total.unknown} run(s) reported no usage" if total.unknown else ""
    return (
        f"- Cost: {total.usd_text()} reported by {total.runs} run(s), "
        f"{format_tokens(total.tokens) if total.runs else 'unknown'} tokens{unknown} "
        "(source: goalsui database, intent_run usage; see Cost below)."
    )


def cost_lines(
    service: Service,
    goal_id: str,
    entries: Sequence[_Entry],
    window: tuple[datetime, datetime],
    zone: ZoneInfo,
) -> list[str]:
    """The ``## Cost`` section (markdown lines)."""
    lines = ["## Cost", ""]
    per_worker: dict[str, _Tally] = {}
    ids_of: dict[str, list[int | None]] = {}
    for e in entries:
        per_worker.setdefault(e.label, _Tally()).add(e.run)
        ids_of.setdefault(e.label, []).append(e.run.id)
    lines.append("| worker | runs with usage | cost | tokens | no usage reported | source |")
    lines.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, t in sorted(per_worker.items(), key=lambda kv: (-kv[1].usd, kv[0])):
        tokens = format_tokens(t.tokens) if t.runs else "unknown"
        source = run_ids(ids_of[label])
        lines.append(
            f"| {cell(label, 80)} | {t.runs} | {t.usd_text()} | {tokens} | {t.unknown} | {source} |"
        )
    priced = [e for e in entries if e.run.cost_usd is not None]
    priced.sort(key=lambda e: (-(e.run.cost_usd or 0.0), e.run.id or 0))
    lines += ["", "Top spenders:", ""]
    if priced:
        for e in priced[:TOP]:
            model = f", {plain(e.run.model, limit=60)}" if e.run.model else ""
            lines.append(
                f"- {plain(e.label, limit=80)} run {e.run.id}: {format_usd(e.run.cost_usd)}{model}"
            )
    else:
        lines.append("- none: no run reported a cost in the window (source: intent_run).")
    lines += ["", "Per night (this goal, same window):", ""]
    start, end = window
    for back in range(NIGHTS):
        shift = timedelta(days=back)
        spent = service.costs.spend(start - shift, end - shift, goal_id=goal_id)
        cost = format_usd(spent.usd) if spent.runs else "unknown"
        tokens = format_tokens(spent.tokens) if spent.runs else "unknown"
        day = (start - shift).astimezone(zone).date().isoformat()
        lines.append(
            f"- Night of {day}: {cost}, {tokens} tokens, {spent.runs} run(s) with usage, "
            f"{spent.unknown} without (source: intent_run)."
        )
    lines.append("")
    return lines
