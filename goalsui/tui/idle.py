"""Quiet when idle: skip re-reading the records when the database files did not change."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from goalsui.tui.fmt import SECONDS_SHOWN_BELOW

#: at most this long between two reads of the records' fingerprint, changed or not
TOKEN_EVERY_S = 15.0


class StampGate:
    """Is a cheap stamp (``service.overview.change_stamp``) the same as at the last recent
    look? A stamp of None (PostgreSQL) or an error is never "unchanged". It is taken before
    the fingerprint, so a change landing in between shows as a new stamp next time."""

    def __init__(self, every_s: float = TOKEN_EVERY_S) -> None:
        self.every_s = every_s
        self.seen: Any = None
        self.at = float("-inf")

    def unchanged(self, read: Callable[[], Any]) -> bool:
        try:
            stamp = read()
        except Exception:  # noqa: BLE001 - the full read decides, and reports
            stamp = None
        now = time.monotonic()
        if stamp is not None and stamp == self.seen and now - self.at < self.every_s:
            return True
        self.seen, self.at = stamp, now
        return False


def next_visible_change(
    next_runs: Iterable[datetime | None], now: datetime, *, every_second: bool
) -> datetime:
    """When the next countdown on screen changes its text (see ``fmt.countdown``), at most
    a minute ahead; ``every_second``: something counts in seconds (a stopwatch, an age)."""
    second = now + timedelta(seconds=1)
    if every_second:
        return second
    soonest = now + timedelta(seconds=60)
    for at in next_runs:
        if at is None:
            continue
        left = (at - now).total_seconds()
        if left <= 0:
            continue  # "due" stays "due" until the records change
        if left <= SECONDS_SHOWN_BELOW + 1:
            return second
        unit = 3600 if left >= 86400 else 60
        turn = left - unit * (int(left) // unit)
        soonest = min(soonest, now + timedelta(seconds=max(turn, 0.5)))
    return soonest
