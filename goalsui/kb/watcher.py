"""Live KB watching with watchfiles: classified change batches for the console. Directories are
watched (a watched file is lost after an atomic replace)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from goalsui.kb.paths import CONFIG_FILE

log = logging.getLogger(__name__)

STEP_MS = 50  # how often watchfiles looks for changes
RETRY_S = 2.0  # the pause before a failed watch starts again
IGNORED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "node_modules"})

# What a change is about; decides what the console does with it.
CONFIG = "config"  # <kb>/goalsui.yaml
GOAL = "goal"  # a goal folder or its definition.yaml: re-sync the goal
WORKER = "worker"  # a worker folder or its definition.yaml: re-sync the goal (re-plan)
FILE = "file"  # protocol.md, state.yaml, prompt.md, any other file of the tree
BOX = "box"  # workers/<w>/inbox|outbox/*
LOG = "log"  # log/*
REPORT = "report"  # reports/*


@dataclass(frozen=True)
class KBChange:
    """One changed path, classified. ``rel`` is relative to the goal folder."""

    kind: str
    goal_id: str | None = None
    rel: str = ""


@dataclass(frozen=True)
class KBChanges:
    """A batch of changes seen together (a save, a burst of writes)."""

    changes: tuple[KBChange, ...]

    @property
    def config_changed(self) -> bool:
        return any(c.kind == CONFIG for c in self.changes)

    @property
    def goals_to_sync(self) -> set[str]:
        """Goals whose identity, workers, schedules or YAML files (state.yaml...) changed."""
        return {
            c.goal_id
            for c in self.changes
            if c.goal_id
            and (c.kind in (GOAL, WORKER) or (c.kind == FILE and c.rel.endswith((".yaml", ".yml"))))
        }

    @property
    def files(self) -> set[tuple[str, str]]:
        """``(goal_id, rel)`` of every touched path inside a goal."""
        return {(c.goal_id, c.rel) for c in self.changes if c.goal_id}


def classify(root: Path, path: str | Path) -> KBChange | None:
    """Classify a changed path (None for temp, staging, trash and hidden files)."""
    parts = Path(path).relative_to(root).parts if Path(path).is_relative_to(root) else ()
    if not parts:
        return None
    if any(part.startswith(".") or part in IGNORED_DIRS for part in parts):
        return None
    name = parts[-1]
    if name.endswith(("~", ".swp", ".swx", ".tmp")):
        return None
    if len(parts) == 1:
        if name == CONFIG_FILE:
            return KBChange(CONFIG)
        if "." in name:
            return None  # a loose file at the KB root (goal ids have no dots)
        return KBChange(GOAL, name)
    rest = parts[1:]
    worker = rest[1] if rest[0] == "workers" and len(rest) >= 2 else None
    if rest == ("definition.yaml",):
        kind = GOAL
    elif worker is None:
        kind = {"log": LOG, "reports": REPORT}.get(rest[0], FILE)
    elif len(rest) == 2 or rest[2:] == ("definition.yaml",):
        kind = WORKER
    else:
        kind = BOX if rest[2] in ("inbox", "outbox") else FILE
    return KBChange(kind, parts[0], "/".join(rest))


class KBWatcher:
    """Watches a KB folder and yields :class:`KBChanges` batches until :meth:`stop`."""

    def __init__(self, root: Path | str, *, debounce_ms: int = 1_600) -> None:
        self.root = Path(root).expanduser().resolve()
        self.debounce_ms = debounce_ms
        self.polling = False  # set when the OS refuses more watches
        self.healthy = False
        self.error: str | None = None
        self.batches_seen = 0  # how a test knows the OS watch is in place
        self._stop: asyncio.Event | None = None

    def stop(self) -> None:
        """End :meth:`batches` (call from the loop that iterates it)."""
        if self._stop is not None:
            self._stop.set()

    @property
    def status(self) -> str:
        """One word for a status bar: ok, polling, starting, or the error."""
        if self.error:
            return f"error: {self.error}"
        if not self.healthy:
            return "starting"
        return "polling" if self.polling else "ok"

    def _filter(self, _change: object, path: str) -> bool:
        return classify(self.root, path) is not None

    async def batches(self) -> AsyncIterator[KBChanges]:
        """Yield classified batches until :meth:`stop`; restarts a failed watch."""
        from watchfiles import awatch

        self._stop = asyncio.Event()
        while not self._stop.is_set():
            try:
                watch = awatch(
                    self.root,
                    watch_filter=self._filter,
                    step=STEP_MS,
                    debounce=self.debounce_ms,
                    stop_event=self._stop,
                    force_polling=self.polling or None,
                )
                self.healthy, self.error = True, None
                async for raw in watch:
                    found = (
                        classify(self.root, path) for _, path in sorted(raw, key=lambda i: i[1])
                    )
                    changes = [change for change in found if change is not None]
                    if changes:
                        self.batches_seen += 1
                        yield KBChanges(tuple(changes))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a watch failure is shown, then retried
                self.healthy = False
                self.error = " ".join(str(exc).split())[:120] or type(exc).__name__
                log.warning("KB watch failed: %s", self.error)
                if "limit" in self.error.lower() or "too many" in self.error.lower():
                    self.polling = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), RETRY_S)
        self.healthy = False
