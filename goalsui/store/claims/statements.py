"""The Core statements of the claim path, the one source of its SQL on every engine.

The generic path runs them through SQLAlchemy; the SQLite fast path
(:mod:`goalsui.store.claims.sqlite_hot`) and the first frame (:func:`frame_module`) run
them compiled for SQLite. Each ``UPDATE`` comes in two forms: by one id
(``id == :_id``) and by a group of ids that get identical values (``id IN :_ids``).
Parameters named ``_...`` and ``v_...`` are bound by the caller, the rest are constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, bindparam, func, insert, select, update

from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.store.claims.binds import INTENT, JOURNAL, RUN, Stamp, bind
from goalsui.store.claims.shapes import Cas

#: Rows with identical new values are updated by one ``... WHERE id IN (...)`` when at
#: least this many share them; the others by id.
GROUP_MIN = 3

#: The soonest due time of the active intents (one probe of the (status, next_run_at) index).
SOONEST = select(func.min(INTENT.c.next_run_at)).where(INTENT.c.status == IntentStatus.ACTIVE)

#: How many active intents are due by ``_now`` (the first frame's count).
DUE_COUNT = (
    select(func.count())
    .select_from(INTENT)
    .where(
        INTENT.c.status == IntentStatus.ACTIVE,
        INTENT.c.next_run_at <= bindparam("_now", type_=Stamp()),
    )
)
#: A run still ``running`` (what recording an outcome checks, and the first frame counts).
OPEN_RUN = RUN.c.status == RunStatus.RUNNING
RUNNING_COUNT = select(func.count()).select_from(RUN).where(OPEN_RUN)

#: Which of the runs ``_ids`` are still ``running``.
OPEN_RUNS = select(RUN.c.id).where(RUN.c.id.in_(bindparam("_ids", expanding=True)), OPEN_RUN)


def due(columns: Sequence[Any]) -> Select[Any]:
    """``columns`` of the active intents due by ``_dueby``, soonest first, at most ``_limit``."""
    return (
        select(*columns)
        .where(
            INTENT.c.status == IntentStatus.ACTIVE,
            INTENT.c.next_run_at <= bindparam("_dueby", type_=Stamp()),
        )
        .order_by(INTENT.c.next_run_at)
        .limit(bindparam("_limit"))
    )


def by_ids(columns: Sequence[Any]) -> Select[Any]:
    """``columns`` of the intents whose ids are in ``_ids``."""
    return select(*columns).where(INTENT.c.id.in_(bindparam("_ids", expanding=True)))


#: What ``check_running`` reads of an intent.
RUNNING_READ = ("id", "status", "lease_owner", "next_run_at", "pending_trigger")

_RUN_COLUMNS = [c.name for c in RUN.c if c.name != "id"]
#: Inserts a run row (every column but the id, timestamps through :class:`Stamp`).
RUN_INSERT = insert(RUN).values({n: bind(n, RUN.c[n]) for n in _RUN_COLUMNS})
#: Inserts a journal line.
JOURNAL_INSERT = insert(JOURNAL).values(
    {n: bind(n, JOURNAL.c[n]) for n in ("at", "actor", "action", "subject", "detail")}
)


def _cas(by_id: Any, *extra: Any) -> Any:
    """The claim's compare-and-set ``UPDATE`` for ``by_id`` (one id or an IN list)."""
    return (
        update(INTENT)
        .where(
            by_id,
            INTENT.c.status == IntentStatus.ACTIVE,
            INTENT.c.next_run_at <= bindparam("_dueby", type_=Stamp()),
            *extra,
        )
        .values(
            status=bindparam("v_status"),
            lease_owner=bindparam("v_owner"),
            lease_until=bindparam("v_until", type_=Stamp()),
            attempts=INTENT.c.attempts + bindparam("v_attempts"),
            fires=INTENT.c.fires + bindparam("v_fires"),
            next_run_at=bindparam("v_next_run_at", type_=Stamp()),
            last_fired_at=bindparam("v_fired_at", type_=Stamp()),
            pending_trigger=None,
            pending_event_id=None,
            updated_at=bindparam("_now", type_=Stamp()),
        )
    )


#: The row is still due as selected: its ``next_run_at`` is the ``_due`` read.
_AS_READ = INTENT.c.next_run_at == bindparam("_due", type_=Stamp())
#: One compare-and-set per row ...
CAS = _cas(INTENT.c.id == bindparam("_id"), _AS_READ)
#: ... or one for a group of rows that get identical values (their ``_due`` included).
CAS_GROUP = _cas(INTENT.c.id.in_(bindparam("_ids", expanding=True)), _AS_READ)
#: The per-row parameters of :data:`CAS`, in the order of a
#: :class:`~goalsui.store.claims.shapes.Cas`'s fields.
CAS_KEYS = ("_id", "_due", *(f"v_{k}" for k in Cas._fields[2:]))


#: The run columns an outcome sets, in the order of the planner's tuples (after the id).
RUN_DONE_COLUMNS = (
    "status",
    "reason",
    "finished_at",
    "exit_code",
    "output_tail",
    "output_path",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "model",
    "prompt",
    "argv",
    "needs_review",
)
RUN_DONE_KEYS = ("_id", *(f"v_{k}" for k in RUN_DONE_COLUMNS))


def _run_done(by_id: Any) -> Any:
    return update(RUN).where(by_id).values({k: bind(f"v_{k}", RUN.c[k]) for k in RUN_DONE_COLUMNS})


RUN_DONE = _run_done(RUN.c.id == bindparam("_id"))
RUN_DONE_GROUP = _run_done(RUN.c.id.in_(bindparam("_ids", expanding=True)))

#: The intent columns an outcome sets.
AFTER_COLUMNS = (
    "status",
    "next_run_at",
    "consecutive_failures",
    "last_error",
    "lease_owner",
    "lease_until",
    "pending_trigger",
    "pending_event_id",
    "updated_at",
)

#: What the completion rules read of an intent (and what alerts get to see).
AFTER_READ = (
    "id",
    "thread_id",
    "goal_id",
    "worker",
    "title",
    "kind",
    "status",
    "schedule",
    "timezone",
    "next_run_at",
    "max_fires",
    "fires",
    "expires_at",
    "attempts",
    "consecutive_failures",
    "lease_owner",
    "lease_until",
    "last_error",
    "pending_trigger",
    "pending_event_id",
    "last_alert_at",
    "on_interrupt",
    "runner",
)


def _after(by_id: Any) -> Any:
    return (
        update(INTENT)
        .where(
            by_id,
            INTENT.c.status == IntentStatus.FIRING,
            INTENT.c.lease_owner == bindparam("_owner"),
        )
        .values({k: bind(f"v_{k}", INTENT.c[k]) for k in AFTER_COLUMNS})
    )


AFTER_KEYS = ("_id", *(f"v_{k}" for k in AFTER_COLUMNS))
AFTER = _after(INTENT.c.id == bindparam("_id"))
AFTER_GROUP = _after(INTENT.c.id.in_(bindparam("_ids", expanding=True)))


def frame_module() -> str:
    """The text of :mod:`goalsui.store.frame_sql`: the statements the first frame runs
    (:data:`SOONEST`, :data:`DUE_COUNT`, :data:`RUNNING_COUNT`, the summary's counts and the
    day's spend) compiled for SQLite, constants inline and ``_``-named parameters left as
    ``?`` (tests/unit/test_frame_sql.py checks the file against it)."""
    from sqlalchemy import String
    from sqlalchemy.dialects import sqlite

    from goalsui.store import summary, usage

    dialect = sqlite.dialect()
    literal = String().literal_processor(dialect)  # type: ignore[no-untyped-call]  # untyped in SQLAlchemy
    assert literal is not None
    statements = {
        "SOONEST": SOONEST,
        "DUE_COUNT": DUE_COUNT,
        "RUNNING_COUNT": RUNNING_COUNT,
        "GOAL_COUNT": summary.GOAL_COUNT,
        "GOAL_ERROR_COUNT": summary.GOAL_ERROR_COUNT,
        "INTENTS_BY_STATUS": summary.INTENTS_BY_STATUS,
        "ATTENTION_SINCE": summary.ATTENTION_SINCE,
        "SPEND_BETWEEN": usage.SPEND_BETWEEN,
        "SPEND_OF_GOAL": usage.SPEND_OF_GOAL,
    }
    lines = [
        '"""The first frame\'s SQL: the Core statements it shares with the service and the',
        "claim path, compiled for SQLite by ``goalsui.store.claims.statements.frame_module()``",
        "(tests/unit/test_frame_sql.py fails when they drift). Text, so that the first frame",
        'imports no SQLAlchemy."""',
        "",
    ]
    for name, statement in statements.items():
        compiled = statement.compile(dialect=dialect)
        unset = {key: None for key in compiled.params if key.startswith("_")}
        expanded = compiled.construct_expanded_state(unset)  # IN lists as one ? each
        parts = " ".join(expanded.statement.split()).split("?")
        sql = parts[0]
        for key, rest in zip(expanded.positiontup or [], parts[1:], strict=True):
            value = expanded.parameters[key]
            if key.startswith("_"):
                sql += "?" + rest
            elif isinstance(value, int | float):
                sql += repr(value) + rest
            else:
                sql += literal(str(value)) + rest
        assert '"' not in sql and "\\" not in sql, sql  # written between double quotes as is
        lines.append(f'{name} = "{sql}"')
    return "\n".join(lines) + "\n"
