"""The database's schema (``goalsui db``), reached as ``service.schema``."""

from __future__ import annotations

from typing import Any

from goalsui.service.context import Aggregate


class Schema(Aggregate):
    """The database's schema: its state and its upgrade."""

    def status(self) -> dict[str, Any]:
        """``goalsui db status``: the database's schema revision against this goalsui's."""
        from goalsui.store import schema

        return schema.status(self.ctx.store.engine).as_json()

    def upgrade(self) -> dict[str, Any]:
        """``goalsui db upgrade``: apply pending migrations (works on an outdated database)."""
        from goalsui.store import schema

        before, after = schema.upgrade(self.ctx.store.engine)
        return {"before": before.as_json(), "after": after.as_json()}
