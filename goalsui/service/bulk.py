"""Bulk records for ``goalsui bench``: many intents in one transaction, counts, a wipe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select

from goalsui.domain.states import RunStatus
from goalsui.service.context import Aggregate
from goalsui.store.models import Event, Intent, IntentRun, Journal
from goalsui.store.tables import table_of


class Bulk(Aggregate):
    """Bulk records of one service, for the benchmarks (``service.bulk``)."""

    def insert_intents(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert intents given as column values, in one transaction (no journal, no checks),
        5000 rows per Core ``executemany``."""
        with self.ctx.store.engine.begin() as conn:
            for start in range(0, len(rows), 5000):
                conn.execute(
                    insert(table_of(Intent)), [dict(r) for r in rows[start : start + 5000]]
                )

    def count_intents(self) -> int:
        """How many intents the database holds."""
        return self.ctx.store.count_rows(table_of(Intent))

    def count_runs(self, status: RunStatus) -> int:
        """How many runs with this status the database holds."""
        return self.ctx.store.count_rows(table_of(IntentRun), status=status)

    def ok_run_counts(self) -> tuple[int, int, int]:
        """(ok runs, intents with an ok run, intents with more than one ok run)."""
        t = table_of(IntentRun)
        per = (
            select(t.c.intent_id, func.count().label("n"))
            .where(t.c.status == RunStatus.OK)
            .group_by(t.c.intent_id)
            .subquery()
        )
        with self.ctx.store.engine.connect() as conn:
            row = conn.execute(
                select(
                    func.coalesce(func.sum(per.c.n), 0),
                    func.count(),
                    func.count().filter(per.c.n > 1),
                )
            ).one()
        return int(row[0]), int(row[1]), int(row[2])

    def clear(self) -> None:
        """Delete every run, event, intent and journal entry (a scratch database's reset)."""
        with self.ctx.store.engine.begin() as conn:
            for model in (IntentRun, Event, Intent, Journal):
                conn.execute(delete(table_of(model)))
