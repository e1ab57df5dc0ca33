"""The morning report's cost section: per worker, per night, and the top spenders. Runs that
reported nothing count as ``unknown``, never as zero cost."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Protocol

from goalsui.domain.budget import Spend, format_tokens, format_usd
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


def _reported(run: IntentRun) -> bool:
    return not (run.cost_usd is None and run.tokens_in is None and run.tokens_out is None)


def _tally(runs: Sequence[IntentRun]) -> Spend:
    """What ``runs`` reported; an executed run that reported nothing counts as unknown."""
    said = [r for r in runs if _reported(r)]
    return Spend(
        usd=sum(r.cost_usd or 0.0 for r in said),
        tokens=sum((r.tokens_in or 0) + (r.tokens_out or 0) for r in said),
        runs=len(said),
        unknown=sum(1 for r in runs if not _reported(r) and r.status in EXECUTED_RUNS),
    )


def _texts(spend: Spend) -> tuple[str, str]:
    """The cost and the tokens of ``spend`` as text; ``unknown`` when no run reported usage."""
    if not spend.runs:
        return "unknown", "unknown"
    return format_usd(spend.usd), format_tokens(spend.tokens)


def cell(text: object, limit: int = 120) -> str:
    """Text for a Markdown table cell: plain, one line, its pipes escaped."""
    return plain(str(text), limit=limit).replace("|", "\\|").replace("\n", " ")


def run_ids(ids: Sequence[int | None]) -> str:
    """``run 4`` or ``runs 1, 2, 4``: where a report's statement comes from."""
    return ("run " if len(ids) == 1 else "runs ") + ", ".join(str(i) for i in ids)


def cost_summary(entries: Sequence[_Entry]) -> str:
    """One summary line: the night's reported cost and how many runs did not say."""
    total = _tally([e.run for e in entries])
    usd, tokens = _texts(total)
    unknown = f"; {total.unknown} run(s) reported no usage" if total.unknown else ""
    return (
        f"- Cost: {usd} reported by {total.runs} run(s), {tokens} tokens{unknown} "
        "(source: goalsui database, intent_run usage; see Cost below)."
    )


def cost_lines(
    service: Service,
    goal_id: str,
    entries: Sequence[_Entry],
    window: tuple[datetime, datetime],
    zone: tzinfo,
) -> list[str]:
    """The ``## Cost`` section (markdown lines)."""
    lines = ["## Cost", ""]
    runs_of: dict[str, list[IntentRun]] = {}
    for e in entries:
        runs_of.setdefault(e.label, []).append(e.run)
    per_worker = {label: _tally(runs) for label, runs in runs_of.items()}
    lines.append("| worker | runs with usage | cost | tokens | no usage reported | source |")
    lines.append("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, t in sorted(per_worker.items(), key=lambda kv: (-kv[1].usd, kv[0])):
        usd, tokens = _texts(t)
        source = run_ids([r.id for r in runs_of[label]])
        lines.append(
            f"| {cell(label, 80)} | {t.runs} | {usd} | {tokens} | {t.unknown} | {source} |"
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
        cost, tokens = _texts(spent)
        day = (start - shift).astimezone(zone).date().isoformat()
        lines.append(
            f"- Night of {day}: {cost}, {tokens} tokens, {spent.runs} run(s) with usage, "
            f"{spent.unknown} without (source: intent_run)."
        )
    lines.append("")
    return lines
