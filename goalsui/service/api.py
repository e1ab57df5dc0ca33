"""The one service API: the :class:`ServiceContext` with one object per aggregate
(``service.intents.pause(id)``); every mutating call is journaled and announces a
:class:`~goalsui.domain.states.ChangeTopic`. See docs/architecture.md#the-service."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from goalsui.domain.timeutil import utcnow
from goalsui.errors import GoalsuiError, NotFound, ValidationError
from goalsui.kb.layout import KB
from goalsui.service.agents import Agents
from goalsui.service.bulk import Bulk
from goalsui.service.context import ServiceContext
from goalsui.service.costs import Costs
from goalsui.service.events import Events
from goalsui.service.files import Files
from goalsui.service.goals import Goals
from goalsui.service.intents import Intents
from goalsui.service.kbindex import Index
from goalsui.service.lifecycle import Schema
from goalsui.service.overview import Overview
from goalsui.service.runs import Runs
from goalsui.service.schedulers import Schedulers
from goalsui.service.threads import Threads
from goalsui.service.todos import Todos
from goalsui.service.workers import Workers

if TYPE_CHECKING:
    from goalsui.service.nightshift import Nightshift


class Service(ServiceContext):
    """The API of goalsui: the context and its aggregates; thread-safe."""

    def __init__(
        self,
        kb: Path | str,
        db_url: str | None = None,
        state_dir: Path | str | None = None,
        *,
        actor: str = "cli",
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        super().__init__(kb, db_url, state_dir, actor=actor, clock=clock)
        self.index = Index(self)
        self.goals = Goals(self, self.index)
        self.intents = Intents(self, self.goals)
        self.runs = Runs(self, self.intents)
        self.threads = Threads(self, self.intents, self.runs)
        self.todos = Todos(self)
        self.events = Events(self)
        self.files = Files(self, self.index)
        self.workers = Workers(self, self.goals, self.intents, self.index)
        self.agents = Agents(self, self.intents, self.threads, self.runs, self.index)
        self.overview = Overview(self)
        self.schedulers = Schedulers(self)
        self.schema = Schema(self)
        self.costs = Costs(self)
        self.bulk = Bulk(self)  # the benchmarks' records

    @classmethod
    def open(
        cls,
        kb: Path | str,
        db_url: str | None = None,
        state_dir: Path | str | None = None,
        *,
        actor: str = "cli",
        sync: bool = True,
        clock: Callable[[], datetime] = utcnow,
    ) -> Service:
        """Open a service on an existing KB: state folder and schema in place, leftovers
        cleaned, KB index synced; each failure is one line (a database's password hidden)."""
        root = KB(kb).root
        if not root.is_dir():  # checked first: a missing KB creates no state folder
            raise NotFound(
                f"no KB at {root} (create one with 'goalsui init PATH', or pass --kb / set GOALSUI_KB)"
            )
        try:
            service = cls(kb, db_url, state_dir, actor=actor, clock=clock)
        except OSError as exc:
            raise ValidationError(f"cannot prepare the state folder: {exc}") from None
        try:
            service.store.ensure_schema()
        except (SQLAlchemyError, OSError) as exc:
            service.close()
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
            raise GoalsuiError(
                f"cannot open the database {service.db_url_display()}: {reason}"
            ) from None
        if sync:
            service.index.refresh()
        return service

    @cached_property
    def nightshift(self) -> Nightshift:
        """The nightshift goals (loaded on first use)."""
        from goalsui.service.nightshift import Nightshift

        return Nightshift(self, self.goals)
