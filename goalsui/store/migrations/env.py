"""Alembic environment of goalsui: :mod:`goalsui.store.schema` passes a connection inside
the schema lock's transaction (``config.attributes["connection"]``); run by hand, an engine
is made from ``sqlalchemy.url``."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from goalsui.store.schema import migration_options


def run_with(connection: Connection) -> None:
    options = migration_options(connection)
    if "render_as_batch" in context.config.attributes:  # autogenerate_revision(batch=...)
        options["render_as_batch"] = context.config.attributes["render_as_batch"]
    context.configure(connection=connection, **options)
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    from sqlmodel import SQLModel

    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=SQLModel.metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        version_table="alembic_version",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_with(connection)
        return
    from goalsui.store.engine import make_engine

    engine = make_engine(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.connect() as conn, conn.begin():
            run_with(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
