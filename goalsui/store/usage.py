"""Spend and run-statistics queries in SQL (unreported usage counts as ``unknown``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, func, literal, or_, select
from sqlalchemy.engine import Engine

from goalsui.domain.budget import RunPoint, Spend
from goalsui.domain.states import EXECUTED_RUNS, RunStatus
from goalsui.store.claims.binds import INTENT, RUN, Stamp

_KNOWN = or_(
    RUN.c.cost_usd.is_not(None), RUN.c.tokens_in.is_not(None), RUN.c.tokens_out.is_not(None)
)
#: USD, tokens, runs that reported usage, and executed runs that did not
_SPEND = select(
    func.coalesce(func.sum(RUN.c.cost_usd), 0.0),
    func.coalesce(
        func.sum(func.coalesce(RUN.c.tokens_in, 0) + func.coalesce(RUN.c.tokens_out, 0)), 0
    ),
    func.coalesce(func.sum(case((_KNOWN, 1), else_=0)), 0),
    func.coalesce(func.sum(case((and_(~_KNOWN, RUN.c.status.in_(EXECUTED_RUNS)), 1), else_=0)), 0),
).select_from(RUN)
#: ... of the runs started in [``_start``, ``_end``) (the first frame runs it compiled)
SPEND_BETWEEN = _SPEND.where(
    RUN.c.started_at >= bindparam("_start", type_=Stamp()),
    RUN.c.started_at < bindparam("_end", type_=Stamp()),
)
#: ... of one goal's runs (``_goal``; the console's budget lines run it compiled)
SPEND_OF_GOAL = SPEND_BETWEEN.join(INTENT, INTENT.c.id == RUN.c.intent_id).where(
    INTENT.c.goal_id == bindparam("_goal")
)


def spend(
    engine: Engine,
    start: datetime,
    end: datetime,
    *,
    goal_id: str | None = None,
    worker: str | None = None,
) -> Spend:
    """What the runs started in [start, end) reported, for a goal, a worker or everyone."""
    q, params = SPEND_BETWEEN, dict[str, Any](_start=start, _end=end)
    if goal_id is not None:
        q, params["_goal"] = SPEND_OF_GOAL, goal_id
        if worker is not None:
            q = q.where(INTENT.c.worker == worker)
    with engine.connect() as conn:
        row = conn.execute(q, params).one()
    return Spend(float(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0))


def recent_runs(engine: Engine, intent_id: int, limit: int = 30) -> list[RunPoint]:
    """The intent's last ``limit`` executed runs, oldest first."""
    columns = ["id", "status", "started_at", "finished_at", "cost_usd", "tokens_in", "tokens_out"]
    q = (
        select(*(RUN.c[name] for name in columns))
        .where(RUN.c.intent_id == intent_id, RUN.c.status.in_(EXECUTED_RUNS))
        .order_by(RUN.c.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        rows = list(conn.execute(q))
    points = []
    for r in reversed(rows):
        seconds = (r.finished_at - r.started_at).total_seconds() if r.finished_at else None
        tokens = None
        if r.tokens_in is not None or r.tokens_out is not None:
            tokens = (r.tokens_in or 0) + (r.tokens_out or 0)
        points.append(RunPoint(r.id, r.status, r.started_at, seconds, r.cost_usd, tokens))
    return points


@dataclass
class HistogramData:
    """Cumulative bucket counts (``le`` bounds, +Inf last), their sum and count."""

    bounds: tuple[float, ...]
    cumulative: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0


@dataclass
class RunStats:
    """Everything the metrics endpoint reports, read in a few aggregate queries."""

    runs: dict[tuple[str, str], int]  # (status, kind) -> runs
    intents: dict[str, int]  # status -> intents
    cost: dict[tuple[str, str], float]  # (goal, worker) -> USD reported
    tokens_in: int
    tokens_out: int
    duration: HistogramData
    lateness: HistogramData
    budget_skips: int = 0  # runs skipped because a budget was spent


def _seconds_between(engine: Engine, later: Any, earlier: Any) -> Any:
    if engine.dialect.name == "sqlite":
        return (func.julianday(later) - func.julianday(earlier)) * 86400.0
    return func.extract("epoch", later - earlier)


def _histogram(engine: Engine, value: Any, where: Any, bounds: tuple[float, ...]) -> HistogramData:
    cols = [func.coalesce(func.sum(case((value <= b, 1), else_=0)), 0) for b in bounds]
    q = select(*cols, func.coalesce(func.sum(value), 0.0), func.count()).where(where)
    with engine.connect() as conn:
        row = conn.execute(q).one()
    count = int(row[-1] or 0)
    return HistogramData(
        bounds, [int(x or 0) for x in row[: len(bounds)]] + [count], float(row[-2] or 0), count
    )


def run_stats(
    engine: Engine, duration_bounds: tuple[float, ...], lateness_bounds: tuple[float, ...]
) -> RunStats:
    """Run counts by status and kind, intents by status, spend, and the two histograms."""
    kind = func.coalesce(INTENT.c.kind, "unknown")
    by_status = (
        select(RUN.c.status, kind, func.count())
        .select_from(RUN.outerjoin(INTENT, INTENT.c.id == RUN.c.intent_id))
        .group_by(RUN.c.status, kind)
    )
    intents = select(INTENT.c.status, func.count()).group_by(INTENT.c.status)
    goal, worker = func.coalesce(INTENT.c.goal_id, ""), func.coalesce(INTENT.c.worker, "")
    cost = (
        select(goal, worker, func.sum(RUN.c.cost_usd))
        .select_from(RUN.join(INTENT, INTENT.c.id == RUN.c.intent_id))
        .where(RUN.c.cost_usd.is_not(None))
        .group_by(goal, worker)
    )
    tokens = select(
        func.coalesce(func.sum(RUN.c.tokens_in), 0), func.coalesce(func.sum(RUN.c.tokens_out), 0)
    )
    budget = select(func.count()).where(
        RUN.c.status == RunStatus.SKIPPED, RUN.c.reason.like("budget:%")
    )
    with engine.connect() as conn:
        budget_skips = int(conn.execute(budget).scalar() or 0)
        runs = {(r[0], r[1]): int(r[2]) for r in conn.execute(by_status)}
        by_intent = {r[0]: int(r[1]) for r in conn.execute(intents)}
        spent = {(r[0], r[1]): float(r[2] or 0) for r in conn.execute(cost)}
        tin, tout = conn.execute(tokens).one()
    took = _seconds_between(engine, RUN.c.finished_at, RUN.c.started_at)
    late = _seconds_between(engine, RUN.c.started_at, RUN.c.planned_at)
    finished = and_(RUN.c.finished_at.is_not(None), RUN.c.status.in_(EXECUTED_RUNS))
    planned = and_(RUN.c.planned_at.is_not(None), RUN.c.status.in_(EXECUTED_RUNS))
    return RunStats(
        runs=runs,
        intents=by_intent,
        cost=spent,
        tokens_in=int(tin or 0),
        tokens_out=int(tout or 0),
        duration=_histogram(engine, took, finished, duration_bounds),
        lateness=_histogram(engine, late, planned, lateness_bounds),
        budget_skips=budget_skips,
    )


def database_problem(engine: Engine) -> str | None:
    """None while the database answers a query, else why not; SQLite's file is opened
    afresh, so a file deleted or replaced under a running process is noticed."""
    import sqlite3
    from contextlib import closing
    from urllib.parse import quote

    database = engine.url.database if engine.dialect.name == "sqlite" else None
    try:
        if database and database != ":memory:":
            uri = f"file:{quote(database)}?mode=ro"
            with closing(sqlite3.connect(uri, uri=True, timeout=2.0)) as probe:
                probe.execute("SELECT count(*) FROM intent_run WHERE id = 0").fetchone()
            return None
        with engine.connect() as conn:
            conn.execute(select(literal(1))).scalar()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        detail = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
        return f"the database does not answer: {detail}"
