"""The scheduler's timing constants, in one place (see docs/architecture.md)."""

from __future__ import annotations

from datetime import timedelta

IDLE_CAP = 30.0  # seconds: the longest sleep when nothing is due
#: seconds: a claim step (or poll) lasting over twice this (or twice the poll interval)
#: makes the scheduler not ready; a loop waiting for work is always current
HEARTBEAT_EVERY = 3.0
OVERDUE_FLOOR = 0.5  # seconds: the shortest sleep while something overdue stays unclaimed
LOOKAHEAD = 0.25  # seconds: claim this far ahead, then start each turn on time on a loop timer
#: A burst (rows due within LOOKAHEAD of the soonest) that the free slots can take is
#: claimed this many seconds ahead per row, so that its claims are done when it is due:
#: a claim and a start cost 60-75 us a row on a 2-core VM (bench scheduler).
CLAIM_AHEAD_PER_ROW = 100e-6
MAX_AHEAD = 2.0  # seconds: the furthest a burst is claimed ahead (and at most lease / 4)
SWEEP_EVERY = 10.0  # seconds: lease sweep / recovery
#: seconds: intents past their expiry end (a scan of the active rows: not every sweep)
EXPIRE_EVERY = 60.0
PRUNE_EVERY = 3600.0  # seconds
PRUNE_FIRST = 60.0  # seconds after start: the first pruning
PRUNE_AFTER = timedelta(days=30)
CATCH_UP_GRACE = timedelta(seconds=5)  # overdue less than this at start is just "due"
WRITE_BATCH_DELAY = 0.005  # seconds: outcomes ending within this share one transaction
#: seconds: in the timed loop, outcomes wait this long for a claim step to take them (one
#: transaction for both) before the writer records them; a full scheduler wakes a step at once.
WRITE_FALLBACK_DELAY = 0.05
#: outcomes per transaction when the writer records a backlog
WRITE_CHUNK = 1000
#: The database thread runs this much nicer (lower priority) than the process, on Linux:
#: when both threads are runnable on one core, the OS runs the event loop (which starts
#: turns on time) first. The loop thread wakes on the core of the thread that woke it,
#: and at equal priority waits there for that thread's time slice. Measured on a 2-core VM
#: (bench scheduler's spread, alternating runs): lateness p99 ~2.1 -> ~1.4 ms; burst
#: throughput unchanged.
DB_THREAD_NICE = 10
#: seconds: starting a batch's turns yields to the loop at least this often, so that the
#: timers of turns claimed ahead run on time. A yield every 32 runs (~0.5 ms of work)
#: made the spread's lateness p99 ~1.5x APScheduler's; every 0.2 ms, ~1.2x (alternating
#: runs, 2-core VM), at the cost of one loop turn per slice in a burst.
LAUNCH_SLICE = 0.0002
#: seconds: the longest wait between two retries of a failing claim step or outcome write
#: (the wait doubles from the poll interval up to this; see goalsui/scheduler/troubles.py)
RETRY_MAX = 10.0
STOP_MARGIN = 2.0  # seconds a stopping turn gets beyond the grace before it is cancelled
#: A burst of claims records the waiting outcomes in its next step once this many wait,
#: or once the oldest has waited this long (seconds): bookkeeping lags, but boundedly.
PENDING_LIMIT = 20_000
PENDING_MAX_AGE = 2.0
#: The first step of a tick records the outcomes waiting, unless due rows were left
#: unclaimed at the last look (a burst) and more than this many wait: a burst's backlog
#: would hold up its claims.
FOLD_FIRST_MAX = 100
