"""The schema revision this goalsui writes, checked by one ``SELECT`` without importing
Alembic (a noticeable part of a second for a cold process); :data:`HEAD` needs no SQLAlchemy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

#: The newest revision in ``goalsui/store/migrations/versions``.
HEAD = "0005"


def is_current(engine: Engine) -> bool:
    """True if the database's only recorded revision is :data:`HEAD`."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    except SQLAlchemyError:
        return False  # no version table, or no database yet: the full check decides
    return [row[0] for row in rows] == [HEAD]
