"""The database schema: Alembic migrations shipped in the package, run programmatically.

Creation and upgrades run in one transaction under a lock (an advisory lock on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so processes starting together on a fresh database are safe."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import SQLModel

from goalsui.errors import GoalsuiError
from goalsui.store import models  # registers the tables on SQLModel.metadata
from goalsui.store.engine import sqlite_file

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version"
#: pg_advisory_xact_lock key that serialises schema creation/upgrades ("goalsui" in ASCII).
ADVISORY_LOCK_KEY = 0x676F616C737569

EMPTY, CURRENT, OUTDATED = "empty", "current", "outdated"
NEWER, UNVERSIONED = "newer", "unversioned"


class SchemaError(GoalsuiError):
    """The database schema does not match this goalsui (older, newer or unversioned)."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database stands against the migrations this goalsui ships."""

    state: str  # empty | current | outdated | newer | unversioned
    current: tuple[str, ...]  # the revision(s) stamped in the database; () when none
    head: str  # the newest revision this goalsui knows
    pending: tuple[str, ...] = field(default=())  # revisions an upgrade would apply, oldest first

    @property
    def current_label(self) -> str:
        return ",".join(self.current) if self.current else "none"

    def describe(self) -> str:
        """One line for people."""
        return {
            EMPTY: "empty: the schema is created on first use (or by 'goalsui db upgrade')",
            CURRENT: "up to date",
            OUTDATED: f"{len(self.pending)} migration(s) pending: run 'goalsui db upgrade'",
            NEWER: "newer than this goalsui knows: upgrade goalsui",
            UNVERSIONED: "goalsui tables without a schema version: run 'goalsui db upgrade'",
        }[self.state]

    def error(self) -> SchemaError:
        if self.state == NEWER:
            return SchemaError(
                f"the database schema (rev {self.current_label}) is newer than this goalsui "
                "knows; upgrade goalsui"
            )
        if self.state == OUTDATED:
            return SchemaError(
                f"the database schema (rev {self.current_label}) is older than this goalsui "
                f"(rev {self.head}); run 'goalsui db upgrade'"
            )
        return SchemaError(
            "the database has goalsui tables but no schema version; run 'goalsui db upgrade'"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "current": list(self.current),
            "head": self.head,
            "pending": list(self.pending),
            "message": self.describe(),
        }


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for the shipped migrations, run on ``connection`` (env.py)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def script_directory() -> ScriptDirectory:
    """The shipped revisions (parsed once per process: compiling them costs ~10 ms)."""
    return _script_directory(str(MIGRATIONS_DIR))


@functools.lru_cache(maxsize=4)
def _script_directory(location: str) -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", location)
    return ScriptDirectory.from_config(config)


def head_revision() -> str:
    head = script_directory().get_current_head()
    if head is None:  # pragma: no cover - the package always ships a revision
        raise SchemaError("this goalsui ships no schema migrations")
    return head


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    """Render ``UTCDateTime`` and ``AutoString`` as plain SQLAlchemy types, so migrations
    do not depend on application code that may change."""
    if type_ != "type":
        return False
    from sqlmodel.sql.sqltypes import AutoString

    if isinstance(obj, models.UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if isinstance(obj, AutoString):
        return f"sa.String(length={obj.length})" if obj.length else "sa.String()"
    return False


def migration_options(connection: Connection) -> dict[str, Any]:
    """The ``context.configure`` options shared by env.py and the drift check."""
    return {
        "target_metadata": SQLModel.metadata,
        "render_as_batch": connection.dialect.name == "sqlite",
        "compare_type": True,
        "render_item": render_item,
        # autogenerate looks at goalsui's tables only (never the version table)
        "include_object": lambda _obj, name, type_, *_: (type_, name) != ("table", VERSION_TABLE),
        "version_table": VERSION_TABLE,
    }


def _status(connection: Connection) -> SchemaStatus:
    script = script_directory()
    head = head_revision()
    tables = set(inspect(connection).get_table_names())
    ours = set(SQLModel.metadata.tables)
    current: tuple[str, ...] = ()
    if VERSION_TABLE in tables:
        ctx = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        current = tuple(sorted(ctx.get_current_heads()))
    if not current:
        state = UNVERSIONED if tables & ours else EMPTY
        return SchemaStatus(state, (), head, _pending(script, None))
    for rev in current:
        try:
            known = script.get_revision(rev)
        except CommandError:
            known = None
        if known is None:
            return SchemaStatus(NEWER, current, head)
    if set(current) == set(script.get_heads()):
        return SchemaStatus(CURRENT, current, head)
    return SchemaStatus(OUTDATED, current, head, _pending(script, current))


def _pending(script: ScriptDirectory, current: tuple[str, ...] | None) -> tuple[str, ...]:
    revs = list(script.iterate_revisions("heads", current or "base"))
    return tuple(r.revision for r in reversed(revs))


def status(engine: Engine) -> SchemaStatus:
    """The schema state of the database behind ``engine``."""
    with _connect(engine) as conn, conn.begin():
        return _status(conn)


def schema_drift(connection: Connection) -> list[Any]:
    """Differences between the models and the database (Alembic autogenerate)."""
    ctx = MigrationContext.configure(connection, opts=migration_options(connection))
    return list(compare_metadata(ctx, SQLModel.metadata))


def ensure_schema(engine: Engine) -> SchemaStatus:
    """Create the schema of an empty database; refuse an older or newer one (SchemaError)."""
    found = status(engine)
    if found.state == CURRENT:
        return found
    if found.state != EMPTY:
        raise found.error()
    return _locked(engine, create_only=True)


def upgrade(engine: Engine) -> tuple[SchemaStatus, SchemaStatus]:
    """``goalsui db upgrade``: apply pending migrations; returns (before, after).

    A pre-migration database is adopted when its tables match the models; a deleted
    SQLite file is created again, empty (only here)."""
    guard = sqlite_file(engine)
    if guard is not None:
        guard.may_create = True
    before = status(engine)
    if before.state == NEWER:
        raise before.error()
    if before.state == CURRENT:
        return before, before
    return before, _locked(engine, create_only=False)


def _locked(engine: Engine, *, create_only: bool) -> SchemaStatus:
    """Re-check the state under the lock and migrate to head in the same transaction."""
    with _connect(engine) as conn, conn.begin():
        # SQLite's BEGIN IMMEDIATE already holds the write lock; PostgreSQL takes an advisory one.
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})
        found = _status(conn)
        if found.state == CURRENT:
            return found
        if found.state == NEWER or (create_only and found.state != EMPTY):
            raise found.error()
        if found.state == UNVERSIONED:
            drift = schema_drift(conn)
            if drift:
                raise SchemaError(
                    "the database has goalsui tables but no schema version, and they differ "
                    f"from this goalsui's schema ({len(drift)} difference(s)); "
                    "use a new database"
                )
            command.stamp(alembic_config(conn), "head")
        else:
            command.upgrade(alembic_config(conn), "head")
        return _status(conn)


def _connect(engine: Engine) -> Connection:
    try:
        return engine.connect()
    except OperationalError as exc:
        where = engine.url.render_as_string(hide_password=True)
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise GoalsuiError(f"cannot open the database {where}: {reason}") from None


def autogenerate_revision(url: str, message: str, rev_id: str | None = None) -> None:
    """Write a new revision from the models' diff against ``url`` (developers only)."""
    from goalsui.store.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn, conn.begin():
            command.revision(
                alembic_config(conn), message=message, autogenerate=True, rev_id=rev_id
            )
    finally:
        engine.dispose()
