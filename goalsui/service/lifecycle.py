"""Opening a service on a KB and its database, and the database's schema (``goalsui db``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError

from goalsui.errors import GoalsuiError, NotFound, ValidationError
from goalsui.kb.layout import KB
from goalsui.service.context import ServiceContext

S = TypeVar("S", bound=ServiceContext)


def open_service(
    cls: type[S],
    kb: Path | str,
    db_url: str | None,
    state_dir: Path | str | None,
    *,
    actor: str,
    clock: Callable[[], datetime],
) -> S:
    """A ``cls`` on an existing KB with its state folder and schema in place; each
    failure is one line (a database's password hidden)."""
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
    return service


class Schema:
    """The database's schema (``goalsui db``), reached as ``service.schema``."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    def status(self) -> dict[str, Any]:
        """``goalsui db status``: the database's schema revision against this goalsui's."""
        from goalsui.store import schema

        return schema.status(self.ctx.store.engine).as_json()

    def upgrade(self) -> dict[str, Any]:
        """``goalsui db upgrade``: apply pending migrations (works on an outdated database)."""
        from goalsui.store import schema

        before, after = schema.upgrade(self.ctx.store.engine)
        return {"before": before.as_json(), "after": after.as_json()}
