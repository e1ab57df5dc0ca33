"""The claim backend: the scheduler's transactions.

:class:`ClaimBackend` is what the scheduler needs of the database. :class:`SqlClaimBackend`
runs it on any SQLAlchemy engine; what the engine has (row locks, a fast path through the
DBAPI cursor) is decided once, from the dialect, by its primitives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Protocol

from sqlalchemy.engine import Connection, Engine

from goalsui.domain.durations import format_duration
from goalsui.errors import GoalsuiError
from goalsui.store import processes
from goalsui.store.claims import housekeeping, recovery
from goalsui.store.claims.claim import LostRace, burst_size, claim_rows, record_overlaps
from goalsui.store.claims.complete import complete
from goalsui.store.claims.planner import JournalEntry, bare_completion, journal_rows
from goalsui.store.claims.primitives import primitives_for
from goalsui.store.claims.shapes import (
    AfterDecision,
    BurstProbe,
    CatchUpPlan,
    ClaimResult,
    ClaimRules,
    Completion,
    CompletionResult,
    RecoveryResult,
    Row,
)
from goalsui.store.claims.statements import RUNNING_READ

log = logging.getLogger(__name__)


DecideAfter = Callable[[Row, Completion], AfterDecision]


class ClaimBackend(Protocol):
    """What the scheduler asks of the database (each call one short transaction).

    :meth:`acquire`, :meth:`release`, :meth:`recover` and :meth:`prune` are the claim
    cycle; the rest are the scheduler's cheap reads and its lease and housekeeping
    writes. The scheduler gets one injected and calls it only from its database thread;
    the rules it applies (:class:`ClaimRules`) are given once, when it is built.
    """

    def acquire(
        self,
        owner: str,
        now: datetime,
        lease_until: datetime,
        limit: int,
        *,
        due_by: datetime | None = None,
        burst: BurstProbe | None = None,
        completions: Sequence[Completion] = (),
        check_overlaps: bool = False,
    ) -> ClaimResult: ...

    def release(
        self, owner: str, completions: Sequence[Completion], now: datetime
    ) -> list[CompletionResult]: ...

    def recover(
        self,
        owner: str,
        now: datetime,
        *,
        host: str | None = None,
        kill: Callable[[int], bool] | None = None,
    ) -> RecoveryResult: ...

    def record_process_group(self, run_id: int, host: str, pgid: int) -> bool: ...

    def renew_leases(
        self, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
    ) -> dict[int, str]: ...

    def check_running(self, intent_ids: Sequence[int]) -> dict[int, Row]: ...

    def soonest_burst(self, probe: BurstProbe | None = None) -> tuple[datetime | None, int]: ...

    def end_expired(self, *, now: datetime) -> list[Row]: ...

    def catch_up(
        self, *, now: datetime, overdue_before: datetime, kinds: Sequence[str], limit: timedelta
    ) -> list[tuple[Row, CatchUpPlan]]: ...

    def prune(self, before: datetime, batch: int = 5000) -> list[Row]: ...


class SqlClaimBackend:
    """The claim backend on any SQLAlchemy engine (generic SQL, row locks if the
    dialect has them), applying ``rules``. Writes go to ``engine``; the cheap reads
    (:meth:`check_running`, :meth:`soonest_burst`) to ``read_engine`` (default: ``engine``)."""

    def __init__(
        self, engine: Engine, rules: ClaimRules, read_engine: Engine | None = None
    ) -> None:
        self.engine = engine
        self.rules = rules
        self.read_engine = engine if read_engine is None else read_engine
        self.p = primitives_for(engine.dialect)

    def _after(self, now: datetime) -> DecideAfter:
        """The completion rules as of ``now``."""
        decide = self.rules.decide_after
        return lambda row, c: decide(row, c, now)

    @contextmanager
    def _write(self, now: datetime) -> Iterator[tuple[Connection, list[JournalEntry]]]:
        """One transaction, and the journal lines its body collects, written at its end."""
        journal: list[JournalEntry] = []
        with self.engine.begin() as conn:
            yield conn, journal
            if journal:
                self.p.insert_journal(conn, journal_rows(now, journal))

    # -- claim -------------------------------------------------------------------------------
    def acquire(
        self,
        owner: str,
        now: datetime,
        lease_until: datetime,
        limit: int,
        *,
        due_by: datetime | None = None,
        burst: BurstProbe | None = None,
        completions: Sequence[Completion] = (),
        check_overlaps: bool = False,
    ) -> ClaimResult:
        """Claim up to ``limit`` rows due by ``due_by`` (default ``now``; their runs start
        at their due time) in ONE transaction, recording ``completions`` first (results in
        ``released``): claims do not queue behind separate completion commits, and a fire
        costs half the commits. The result also sizes the ``burst`` due with the soonest
        row left. If the transaction fails with outcomes in it, they are recorded on their
        own (see :meth:`release`), then the claim.
        """
        due_by = due_by or now
        p, rules = self.p, self.rules

        def claim(items: Sequence[Completion]) -> ClaimResult:
            """One transaction: outcomes, overlaps, the claim, the soonest row left and the
            burst due with it, then the journal lines of all of it at once."""
            result = ClaimResult()
            with self._write(now) as (conn, journal):
                if items:
                    decide = self._after(now)
                    result.released = complete(
                        p, conn, journal, owner=owner, now=now, items=items, decide=decide
                    )
                if check_overlaps:
                    result.overlaps = record_overlaps(
                        p, conn, journal, owner=owner, now=now, overlap_next=rules.overlap_next
                    )
                claim_rows(p, conn, result, journal, owner, now, lease_until, limit, due_by, rules)
                result.soonest = p.soonest(conn)
                if result.soonest is not None and result.soonest > due_by:
                    result.burst = burst_size(conn, result.soonest, burst)
            return result

        try:
            return claim(completions)
        except LostRace:
            return ClaimResult(released=self.release(owner, completions, now))
        except GoalsuiError:
            raise
        except Exception as exc:
            if not completions:
                raise
            log.warning("a claim with %d outcomes failed (%s); apart now", len(completions), exc)
        done = self.release(owner, completions, now)
        try:
            result = claim(())
        except LostRace:
            result = ClaimResult()
        result.released = done
        return result

    # -- outcomes ------------------------------------------------------------------------------
    def release(
        self, owner: str, completions: Sequence[Completion], now: datetime
    ) -> list[CompletionResult]:
        """Record outcomes and apply the rules, for many runs in one transaction.

        The intent changes only if its row is still ``firing`` with our lease (a
        compare-and-set); otherwise (cancelled meanwhile, lease lost) the run gets its
        outcome and the intent is left as it is: a cancel that happened meanwhile wins.
        One outcome never takes the others with it: if the batch fails, each outcome is
        recorded in its own transaction, and one that still fails is logged and recorded
        with its status and reason only.
        """
        if not completions:
            return []
        decide = self._after(now)
        try:
            return self._complete(owner, now, completions, decide)
        except GoalsuiError:
            raise
        except Exception as exc:  # noqa: BLE001 - each outcome then goes on its own
            if len(completions) == 1:
                return self._complete_bare(owner, now, completions[0], decide, exc)
            log.warning(
                "recording %d outcomes at once failed (%s); one by one", len(completions), exc
            )
        results: list[CompletionResult] = []
        for c in completions:
            try:
                results.extend(self._complete(owner, now, [c], decide))
            except GoalsuiError:
                raise
            except Exception as exc:  # noqa: BLE001 - recorded with its status only
                results.extend(self._complete_bare(owner, now, c, decide, exc))
        return results

    def _complete(
        self, owner: str, now: datetime, items: Sequence[Completion], decide: DecideAfter
    ) -> list[CompletionResult]:
        with self._write(now) as (conn, journal):
            return complete(self.p, conn, journal, owner=owner, now=now, items=items, decide=decide)

    def _complete_bare(
        self, owner: str, now: datetime, c: Completion, decide: DecideAfter, exc: Exception
    ) -> list[CompletionResult]:
        log.error(
            "run %s: its outcome could not be recorded (%s: %s); recording its status only",
            c.run_id,
            type(exc).__name__,
            " ".join(str(exc).split())[:300],
        )
        return self._complete(owner, now, [bare_completion(c, exc)], decide)

    # -- recovery and leases ---------------------------------------------------------------------
    def recover(
        self,
        owner: str,
        now: datetime,
        *,
        host: str | None = None,
        kill: Callable[[int], bool] | None = None,
    ) -> RecoveryResult:
        """Recover rows left ``firing`` by a dead process (lease expired); see
        :mod:`goalsui.store.claims.recovery`. ``host``: this host's name (default
        :func:`socket.gethostname`); ``kill``: ends a process group (default
        :func:`goalsui.store.processes.kill_group`)."""
        result = RecoveryResult()
        if recovery.nothing_to_recover(self.engine, owner=owner, now=now):
            return result
        host = host or processes.this_host()
        live = recovery.live_owners(self.engine, owner=owner, now=now, host=host)
        alive = recovery.end_live_groups(
            self.engine,
            result,
            owner=owner,
            now=now,
            host=host,
            kill=kill or processes.kill_group,
            live=live,
        )
        with self._write(now) as (conn, journal):
            lock = partial(self.p.lock, skip_locked=True)
            recovery.recover_stale(
                conn,
                result,
                journal,
                now=now,
                decide=self._after(now),
                lock=lock,
                alive=alive,
                live=live,
            )
            recovery.close_orphans(
                conn, result, journal, owner=owner, now=now, alive=alive, live=live
            )
            recovery.release_leases(conn, now)
        return result

    def record_process_group(self, run_id: int, host: str, pgid: int) -> bool:
        """Store where a running run's process group lives (False: the run is not running)."""
        with self.engine.begin() as conn:
            return housekeeping.record_process_group(conn, run_id, host, pgid)

    def renew_leases(
        self, *, owner: str, intent_ids: Sequence[int], lease_until: datetime
    ) -> dict[int, str]:
        """Extend this owner's leases; returns ``{intent_id: status}`` of the rows still ours."""
        if not intent_ids:
            return {}
        with self.engine.begin() as conn:
            return housekeeping.renew_leases(
                conn, owner=owner, intent_ids=intent_ids, lease_until=lease_until
            )

    # -- reads ---------------------------------------------------------------------------------
    def check_running(self, intent_ids: Sequence[int]) -> dict[int, Row]:
        """Status, lease owner and next due time of the given intents (a cheap read)."""
        if not intent_ids:
            return {}
        with self.read_engine.connect() as conn:
            found = self.p.read_intents(conn, list(intent_ids), RUNNING_READ)
        return {r["id"]: r for r in found}

    def soonest_burst(self, probe: BurstProbe | None = None) -> tuple[datetime | None, int]:
        """``min(next_run_at)`` of the active intents (one index probe), and the burst due
        with it (0 without a ``probe``)."""
        with self.read_engine.connect() as conn:
            soonest = self.p.soonest(conn)
            return soonest, burst_size(conn, soonest, probe)

    # -- housekeeping ------------------------------------------------------------------------------
    def end_expired(self, *, now: datetime) -> list[Row]:
        """Active or paused intents past ``expires_at`` become ``done``; returns them."""
        with self._write(now) as (conn, journal):
            return housekeeping.end_expired_rows(conn, journal, now=now)

    def catch_up(
        self, *, now: datetime, overdue_before: datetime, kinds: Sequence[str], limit: timedelta
    ) -> list[tuple[Row, CatchUpPlan]]:
        """Apply the catch-up rule (occurrences older than ``limit`` are missed) to active
        rows overdue since before ``overdue_before`` (see
        :func:`goalsui.store.claims.housekeeping.catch_up_rows`)."""
        plan = self.rules.plan_catch_up
        with self._write(now) as (conn, journal):
            done, missed = housekeeping.catch_up_rows(
                conn,
                journal,
                now=now,
                overdue_before=overdue_before,
                kinds=kinds,
                plan=lambda row: plan(row, now, limit),
                limit_text=format_duration(limit),
            )
            self.p.insert_runs(conn, missed)
        return done

    def prune(self, before: datetime, batch: int = 5000) -> list[Row]:
        """Delete finished runs that started before ``before``; returns (id, output_path)."""
        return housekeeping.prune_runs(self.engine, before=before, batch=batch)
