"""Which host and process group run a run: written once its runner has spawned.

Recovery uses it to kill an interrupted run's process group when it is on this host,
and to leave alone a run whose group is still alive (see docs/architecture.md).
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.engine import Engine

from goalsui.domain.models import IntentRun
from goalsui.domain.states import RunStatus
from goalsui.store.tables import table_of

RUN = table_of(IntentRun)


def record_process_group(engine: Engine, run_id: int, host: str, pgid: int) -> bool:
    """Set ``host`` and ``pgid`` on a run still ``running``; returns whether it was."""
    with engine.begin() as conn:
        result = conn.execute(
            update(RUN)
            .where(RUN.c.id == run_id, RUN.c.status == RunStatus.RUNNING)
            .values(host=host[:255], pgid=int(pgid))
        )
        return bool(result.rowcount)
