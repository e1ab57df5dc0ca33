"""The claim backend the scheduler talks to, injected rather than reached through the service.

:class:`ClaimBackend` is what the scheduler needs of the store: one claim step, outcome
writes, recovery, catch-up, expiry, pruning and leases. :class:`EngineClaimBackend` binds
the functions of :mod:`goalsui.store.claims` to a writer and a reader engine (see
docs/architecture.md, "The scheduler").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.engine import Engine

from goalsui.store import claims
from goalsui.store.claims import (
    AfterDecision,
    BurstProbe,
    CatchUpPlan,
    ClaimDecision,
    ClaimResult,
    Completion,
    CompletionResult,
    RecoveryResult,
)
from goalsui.store.process_groups import record_process_group

Row = dict[str, Any]


class ClaimBackend(Protocol):
    """The scheduler's side of the store; every method runs on the scheduler's DB thread."""

    def step(
        self,
        *,
        owner: str,
        now: datetime,
        lease_until: datetime,
        limit: int,
        decide: Callable[[Row], ClaimDecision],
        completions: Sequence[Completion],
        decide_after: Callable[[Row, Completion], AfterDecision],
        overlap_next: Callable[[Row], datetime | None],
        check_overlaps: bool,
        due_by: datetime,
        burst: BurstProbe | None,
    ) -> tuple[ClaimResult, list[CompletionResult]]: ...

    def complete_runs(
        self,
        *,
        owner: str,
        now: datetime,
        items: Sequence[Completion],
        decide: Callable[[Row, Completion], AfterDecision],
    ) -> list[CompletionResult]: ...

    def soonest_burst(self, probe: BurstProbe | None) -> tuple[datetime | None, int]: ...

    def check_running(self, intent_ids: Sequence[int]) -> dict[int, Row]: ...

    def renew_leases(
        self, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
    ) -> dict[int, str]: ...

    def recover_expired(
        self, *, owner: str, now: datetime, decide: Callable[[Row, Completion], AfterDecision]
    ) -> RecoveryResult: ...

    def end_expired(self, *, now: datetime) -> list[Row]: ...

    def catch_up(
        self,
        *,
        now: datetime,
        overdue_before: datetime,
        kinds: Sequence[str],
        plan: Callable[[Row], CatchUpPlan | None],
        limit_text: str,
    ) -> list[tuple[Row, CatchUpPlan]]: ...

    def prune_runs(self, *, before: datetime) -> list[Row]: ...

    def record_process_group(self, run_id: int, host: str, pgid: int) -> None: ...


@dataclass(frozen=True)
class EngineClaimBackend:
    """:mod:`goalsui.store.claims` on ``engine`` (writes) and ``read_engine`` (cheap reads)."""

    engine: Engine
    read_engine: Engine

    def step(self, **kwargs: Any) -> tuple[ClaimResult, list[CompletionResult]]:
        return claims.step(self.engine, **kwargs)

    def complete_runs(self, **kwargs: Any) -> list[CompletionResult]:
        return claims.complete_runs(self.engine, **kwargs)

    def soonest_burst(self, probe: BurstProbe | None) -> tuple[datetime | None, int]:
        return claims.soonest_burst(self.read_engine, probe)

    def check_running(self, intent_ids: Sequence[int]) -> dict[int, Row]:
        return claims.check_running(self.read_engine, intent_ids)

    def renew_leases(self, **kwargs: Any) -> dict[int, str]:
        return claims.renew_leases(self.engine, **kwargs)

    def recover_expired(self, **kwargs: Any) -> RecoveryResult:
        return claims.recover_expired(self.engine, **kwargs)

    def end_expired(self, *, now: datetime) -> list[Row]:
        return claims.end_expired(self.engine, now=now)

    def catch_up(self, **kwargs: Any) -> list[tuple[Row, CatchUpPlan]]:
        return claims.catch_up(self.engine, **kwargs)

    def prune_runs(self, *, before: datetime) -> list[Row]:
        return claims.prune_runs(self.engine, before=before)

    def record_process_group(self, run_id: int, host: str, pgid: int) -> None:
        record_process_group(self.engine, run_id, host, pgid)
