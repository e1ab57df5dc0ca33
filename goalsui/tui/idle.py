"""Quiet when idle: skip re-reading the records when the database files did not change."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: at most this long between two reads of the records' fingerprint, changed or not
TOKEN_EVERY_S = 15.0


class StampGate:
    """Says whether a cheap stamp (``Service.change_stamp``) is the same as last time.

    ``unchanged(read)`` returns True while ``read()`` gives the stamp seen before and
    the last full look is recent; otherwise it remembers the new stamp and returns False
    (the caller then reads the fingerprint). A stamp of None (PostgreSQL) or an error
    reading it is never "unchanged". The stamp is taken before the fingerprint is read,
    so a change that lands in between shows as a new stamp on the next look.
    """

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
