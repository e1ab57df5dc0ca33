"""The schema revision this goalsui writes, checked without importing Alembic (and,
for :data:`HEAD` alone, importable without SQLAlchemy: see :mod:`goalsui.store.snapshot`).

Every start checks the database's schema. When the database already carries
:data:`HEAD` (the common case) one ``SELECT`` says so, and Alembic, whose import costs
a cold process a noticeable part of a second, is never loaded. Anything else (an empty,
older, newer or unversioned database, or a failed read) goes to the full check in
:mod:`goalsui.store.schema`. A test keeps :data:`HEAD` equal to the shipped head.
"""

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
