"""Schema creation on first use."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import SQLModel


def ensure_schema(engine: Engine) -> None:
    """Create every table that does not exist yet."""
    SQLModel.metadata.create_all(engine)
