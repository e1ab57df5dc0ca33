"""How values cross into and out of Core statements on the claim path.

Timestamps are bound as the ORM type :class:`~goalsui.store.models.UTCDateTime`
stores them, but in one step: on SQLite as the text ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC),
elsewhere as aware datetimes. The generic two-stage conversion costs about five times as
much, and the claim path binds several timestamps per row.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, String, bindparam
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.types import TypeDecorator, TypeEngine

from goalsui.store.claims.shapes import Row
from goalsui.store.models import Event, Intent, IntentRun, Journal, UTCDateTime
from goalsui.store.tables import table_of

INTENT: Any = table_of(Intent)
RUN: Any = table_of(IntentRun)
JOURNAL: Any = table_of(Journal)
EVENT: Any = table_of(Event)


def stamp(value: Any) -> Any:
    """A value as bound on SQLite: an aware datetime becomes its stored UTC text."""
    if value.__class__ is datetime:
        if value.tzinfo is not UTC:
            value = value.astimezone(UTC)
        return value.isoformat(" ", "microseconds")[:-6]  # drop "+00:00"
    return value


class Stamp(TypeDecorator[Any]):
    """Binds an aware datetime exactly as :class:`UTCDateTime` stores it, in one step.

    On SQLite that is the text ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC), so comparisons and
    equality with stored values hold; elsewhere the aware datetime itself.
    """

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        # (a str is already in the stored form: see stamper)
        return stamp(value) if dialect.name == "sqlite" else value


def stamper(sqlite: bool) -> Callable[[datetime | None], Any]:
    """Converts a timestamp to its bound form once (for values repeated on every row)."""
    return stamp if sqlite else lambda value: value


def bind(name: str, column: Any) -> BindParameter[Any]:
    """A bind parameter for ``column`` (timestamps through :class:`Stamp`)."""
    if isinstance(column.type, UTCDateTime):
        return bindparam(name, type_=Stamp())
    return bindparam(name, type_=column.type)


def rows(result: Any) -> list[Row]:
    """The rows of a result as plain dicts."""
    return [dict(r._mapping) for r in result]
