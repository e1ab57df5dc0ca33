"""What every aggregate of the service shares: the KB, the store, the clock, the journal."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from goalsui.domain.states import ChangeTopic
from goalsui.domain.timeutil import utcnow
from goalsui.errors import KBError, NotFound
from goalsui.kb.config import KBConfig
from goalsui.kb.layout import KB
from goalsui.service.changes import ChangeHub
from goalsui.service.journal import Journal
from goalsui.service.quick import default_state_dir
from goalsui.store.db import Store
from goalsui.store.engine import sqlite_url

T = TypeVar("T")


def found(record: T | None, what: str, key: object) -> T:
    """``record``, or :class:`NotFound` (``no <what> <key>``) when it is None."""
    if record is None:
        raise NotFound(f"no {what} {key}")
    return record


class ServiceContext:
    """The KB (files), the store (records), the clock, the actor, the journal and the change hub."""

    def __init__(
        self,
        kb: Path | str,
        db_url: str | None = None,
        state_dir: Path | str | None = None,
        *,
        actor: str = "cli",
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kb = KB(kb)
        self.state_dir = (
            Path(state_dir).expanduser().resolve() if state_dir else default_state_dir(self.kb.root)
        )
        self.db_url = db_url or sqlite_url(self.state_dir / "goalsui.db")
        self.store = Store(self.db_url)
        self.actor = actor
        self.clock = clock
        self.changes = ChangeHub(self.store.engine, self.store.url)
        self.journal = Journal(self.store, actor)
        self._config: KBConfig | None = None
        self.config_error: KBError | None = None

    def now(self) -> datetime:
        """The service's clock (injectable for tests and replays)."""
        return self.clock()

    @property
    def runs_dir(self) -> Path:
        """The folder of the runs' live output logs (created on first use)."""
        path = self.state_dir / "runs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def changed(self, what: ChangeTopic | str) -> None:
        """Announce a change to this process's listeners and (PostgreSQL) to the others."""
        self.changes.publish(what)

    def done(self, topic: ChangeTopic | str, action: str, subject: str, detail: str = "") -> None:
        """Journal ``action`` on ``subject``, then announce ``topic``."""
        self.journal.record(action, subject, detail)
        self.changed(topic)

    def config(self, *, reload: bool = False) -> KBConfig:
        """The KB config; a broken file keeps the last good version (or the defaults)."""
        if self._config is None or reload:
            try:
                self._config = self.kb.config()
                self.config_error = None
            except KBError as exc:
                self.config_error = exc
                if self._config is None:
                    self._config = KBConfig()
        return self._config

    def get(self, model: type[T], key: int, what: str) -> T:
        """The ``model`` record with id ``key``, or :class:`NotFound` (``no <what> <key>``)."""
        with self.store.read() as s:
            return found(s.get(model, key), what, key)

    def db_url_display(self) -> str:
        """The database URL with any password hidden."""
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).render_as_string(hide_password=True)

    def close(self) -> None:
        """Stop the change listeners and release the database connections."""
        self.changes.close()
        self.store.dispose()


class Aggregate:
    """One part of the service (``service.goals``, ``service.events``...): it works through
    the shared :class:`ServiceContext`."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx
