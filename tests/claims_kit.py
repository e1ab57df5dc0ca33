"""The claim backend as tests drive it: one engine, the scheduler's rules."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from goalsui.scheduler.rules import Rules
from goalsui.store.claims import SqlClaimBackend


def claims_for(engine: Engine) -> SqlClaimBackend:
    """A claim backend on ``engine`` with the scheduler's rules (the default KB config)."""
    return SqlClaimBackend(engine, Rules())
