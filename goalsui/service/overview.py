"""Read-only overviews (``service.overview``): status summary, change fingerprints, previews."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import select

from goalsui.domain.cron import occurrences, validate_cron
from goalsui.domain.timeutil import load_zone, parse_instant, utcnow
from goalsui.errors import ValidationError
from goalsui.service.context import Aggregate
from goalsui.store.claims.statements import DUE_COUNT, RUNNING_COUNT
from goalsui.store.engine import sqlite_file
from goalsui.store.models import Event, Goal, Intent, IntentRun, Journal, Message, Thread
from goalsui.store.snapshot import file_stamp
from goalsui.store.summary import (
    ATTENTION_SINCE,
    GOAL_COUNT,
    GOAL_ERROR_COUNT,
    INTENTS_BY_STATUS,
)
from goalsui.store.usage import RunStats, database_problem, run_stats

MAX_PREVIEW = 1000


def schedule_preview(
    expression: str,
    *,
    tz: str = "UTC",
    start: str | None = None,
    count: int = 5,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Preview a cron expression (needs no KB or database): ISO instants with offsets."""
    if not 1 <= count <= MAX_PREVIEW:
        raise ValidationError(f"--count must be between 1 and {MAX_PREVIEW}")
    zone = load_zone(tz)
    expr = validate_cron(expression)
    begin = (now or utcnow()) if start is None else parse_instant(start, tz)
    return {
        "expression": expr,
        "timezone": tz,
        "occurrences": [
            t.astimezone(zone).isoformat(timespec="seconds")
            for t in occurrences(expr, tz, begin, count=count)
        ],
    }


class Overview(Aggregate):
    """Read-only overviews of one service (``service.overview``): counts, fingerprints."""

    def run_stats(self, durations: tuple[float, ...], lateness: tuple[float, ...]) -> RunStats:
        """Runs by status and kind, and histograms with these bucket bounds (``/metrics``)."""
        return run_stats(self.ctx.store.read_engine, durations, lateness)

    def database_problem(self) -> str | None:
        """None while the database answers; else one line (readiness probes)."""
        return database_problem(self.ctx.store.engine)

    def change_stamp(self) -> tuple[Any, ...] | None:
        """A SQLite database's fingerprint from two ``stat`` calls (file and WAL size and
        mtime), changed by any commit; None for other databases."""
        guard = sqlite_file(self.ctx.store.engine)
        return None if guard is None else file_stamp(guard.path)

    def change_token(self) -> tuple[Any, ...]:
        """A cheap fingerprint of the records; it differs after any change by anyone."""
        with self.ctx.store.read() as s:
            return (
                s.exec(select(func.max(Intent.updated_at))).one(),
                s.exec(select(func.max(IntentRun.id))).one(),
                s.scalar(RUNNING_COUNT),
                s.exec(select(func.max(IntentRun.finished_at))).one(),
                s.exec(select(func.max(Journal.id))).one(),
                s.exec(select(func.sum(Thread.revision))).one(),
                s.exec(select(func.max(Message.id))).one(),
                s.exec(select(func.max(Goal.updated_at))).one(),
                s.exec(select(func.max(Event.id))).one(),
            )

    def summary(self) -> dict[str, Any]:
        """Counts for the status bar and the plain-text dashboard."""
        now = self.ctx.now()
        with self.ctx.store.read() as s:
            conn = s.connection()

            def count(q: Any, **params: Any) -> int:
                return int(conn.execute(q, params).scalar_one())

            return {
                "goals": count(GOAL_COUNT),
                "goal_errors": count(GOAL_ERROR_COUNT),
                "intents": {status: n for status, n in conn.execute(INTENTS_BY_STATUS)},
                "due": count(DUE_COUNT, _now=now),
                "running": count(RUNNING_COUNT),
                "failed_24h": count(ATTENTION_SINCE, _since=now - timedelta(hours=24)),
            }
