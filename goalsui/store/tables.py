"""The ``Table`` behind a SQLModel model, typed (SQLModel declares no ``__table__``)."""

from __future__ import annotations

from sqlalchemy import Table, inspect
from sqlmodel import SQLModel


def table_of(model: type[SQLModel]) -> Table:
    """The table SQLModel built for ``model`` (a ``table=True`` model)."""
    table = inspect(model).local_table
    if not isinstance(table, Table):  # pragma: no cover - every table model maps one Table
        raise TypeError(f"{model.__name__} is not mapped to a table")
    return table
