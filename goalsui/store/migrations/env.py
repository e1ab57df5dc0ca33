"""Alembic environment of goalsui: :mod:`goalsui.store.schema` passes the connection to
migrate (``config.attributes["connection"]``), inside the schema lock's transaction."""

from __future__ import annotations

from alembic import context

from goalsui.store.schema import migration_options

connection = context.config.attributes["connection"]
context.configure(connection=connection, **migration_options(connection))
with context.begin_transaction():
    context.run_migrations()
