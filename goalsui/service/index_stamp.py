"""Whether the KB index in the database is current, without the database stack.

Each :meth:`goalsui.service.kbindex.Index.sync` records a stamp (``kb-index.json`` in the
state folder): per goal, the stat of every file and folder the index reads, taken before
they are read, plus ``goalsui.yaml``, the set of goal folders, the database file's identity
and a token the sync wrote into the database in the same transaction. The index is current
while all of them still match and no worker intent's status disagrees with its goal's
(the next sync would change it). Any doubt (a file that cannot be read, a symlink where the
index follows one, a goal still being created, another sync since) counts as not current.

Import nothing here that loads SQLAlchemy, SQLModel or pydantic."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from goalsui.domain.states import GoalStatus, IntentStatus
from goalsui.domain.views import worker_intent_key
from goalsui.kb.atomic import atomic_write
from goalsui.kb.paths import CONFIG_FILE
from goalsui.kb.quick import defined_folder
from goalsui.service.quick import read_snapshot
from goalsui.store.snapshot import Snapshot

STAMP_FILE = "kb-index.json"
#: the ``meta`` row each sync writes its token to (the stamp holds the same token)
META_KEY = "kb-index-token"
_VERSION = 1
#: folders of a goal tree the index never reads (``goalsui.kb.authoring._NOT_VALIDATED``;
#: directly under ``workers/`` these names are workers and are read)
NOT_READ = frozenset({"log", "reports", "inbox", "outbox"})
#: a goal being created (``goalsui.kb.layout.STAGING_PREFIX``)
STAGING_PREFIX = ".staging-"
#: a file modified this close to its stat may change again within the same mtime tick,
#: with the same size: its content is hashed as well
RACY_NS = 3_000_000_000
#: ``last_error`` of a worker intent paused because its goal is not active
GOAL_HOLDS = ("goal paused", "goal completed", "goal archived")

#: what the stamp keeps of a goal tree or of ``goalsui.yaml``: the digest of its stat rows
#: (path, type, size, mtime, ctime, inode) and the content digests of racy files
Print = dict[str, Any]


class Doubt(Exception):
    """Something the stamp cannot vouch for (the index counts as not current)."""


def _read_by_index(name: str, in_worker: bool) -> bool:
    """A file the index reads: YAML (definitions, state, binding) and workers' prompts."""
    return name.endswith((".yaml", ".yml")) or (in_worker and name == "prompt.md")


def _stat_row(rel: str, st: os.stat_result) -> tuple[Any, ...]:
    return (rel, stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _rows(goal_dir: Path) -> list[tuple[Any, ...]]:
    """Stat rows of what the index reads in one goal tree (folders: presence only)."""
    rows: list[tuple[Any, ...]] = []

    def walk(folder: str, rel: str) -> None:
        in_workers = rel == "workers/"
        in_worker = rel.startswith("workers/") and rel.count("/") == 2
        with os.scandir(folder) as listing:
            for entry in listing:
                name, path = entry.name, rel + entry.name
                if name.startswith("."):
                    continue  # hidden: never read (temp files of atomic writes land here)
                if entry.is_symlink():
                    if path == "workers" or _read_by_index(name, in_worker):
                        raise Doubt(path)  # the index follows it: its target is not stamped
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if name in NOT_READ and not in_workers:
                        continue
                    rows.append((path + "/", stat.S_IFDIR))
                    walk(entry.path, path + "/")
                elif _read_by_index(name, in_worker):
                    rows.append(_stat_row(path, entry.stat(follow_symlinks=False)))

    walk(str(goal_dir), "")
    rows.sort()
    return rows


def _sum(rows: list[tuple[Any, ...]]) -> str:
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def _digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _config_rows(kb_root: Path) -> list[tuple[Any, ...]]:
    try:
        st = os.lstat(kb_root / CONFIG_FILE)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(st.st_mode):
        raise Doubt(CONFIG_FILE)
    return [_stat_row(CONFIG_FILE, st)]


def _print(base: Path, rows: Callable[[Path], list[tuple[Any, ...]]]) -> Print | None:
    """What the index reads under ``base`` (as ``rows`` lists it): the rows' digest, and the
    content digest of each regular file modified within :data:`RACY_NS` (it may change again
    in the same mtime tick with the same size); None when the stamp cannot vouch for it."""
    try:
        listed = rows(base)
        now_ns = time.time_ns()
        racy = [r[0] for r in listed if r[1] == stat.S_IFREG and r[3] >= now_ns - RACY_NS]
        return {"sum": _sum(listed), "digests": {rel: _digest(base / rel) for rel in racy}}
    except (OSError, Doubt):
        return None


def _matches(base: Path, kept: Print | None, rows: list[tuple[Any, ...]]) -> bool:
    """The rows are as kept, and so is the content of every file kept with a digest."""
    if kept is None or kept["sum"] != _sum(rows):
        return False
    return all(_digest(base / rel) == digest for rel, digest in kept["digests"].items())


def _db_identity(db_file: Path) -> list[int]:
    st = os.stat(db_file)
    return [st.st_dev, st.st_ino]


@dataclass(frozen=True)
class _WorkerIntent:
    goal_id: str
    worker: str
    operation_key: str | None
    status: str
    pending_trigger: str | None
    last_error: str | None


def _held_apart(goal_active: bool, intent: _WorkerIntent) -> bool:
    """A worker intent the next sync would change though no file did: its goal's status
    and its own disagree (``kbindex.align_goal_status``; an operator resumed it meanwhile)."""
    if intent.operation_key != worker_intent_key(intent.goal_id, intent.worker):
        return False  # a follow-up naming the worker: the index does not own it
    if not goal_active:
        firing = intent.status == IntentStatus.FIRING and intent.pending_trigger != "pause"
        return intent.status == IntentStatus.ACTIVE or firing
    return intent.status == IntentStatus.PAUSED and intent.last_error in GOAL_HOLDS


def _db_agrees(snap: Snapshot, token: str) -> bool:
    """The database holds ``token`` (no sync since) and no worker intent its goal's status
    would change (nothing but a sync moved apart from the files)."""
    if snap.scalar("SELECT value FROM meta WHERE key = ?", (META_KEY,)) != token:
        return False
    goals = snap.conn.execute("SELECT goal_id, status FROM goal")
    active = {goal_id: status == GoalStatus.ACTIVE for goal_id, status in goals}
    # only those that can disagree: paused ones, and those of goals not active
    inactive = "SELECT goal_id FROM goal WHERE status != ?"
    where = f"WHERE worker IS NOT NULL AND (status = ? OR goal_id IN ({inactive}))"
    params = (str(IntentStatus.PAUSED), str(GoalStatus.ACTIVE))
    intents = snap.records(_WorkerIntent, "intent", where, params)
    return not any(_held_apart(active.get(i.goal_id, True), i) for i in intents)


def _goal_folders(kb_root: Path) -> list[str]:
    """The goal folders (as ``KB.goal_ids`` lists them); Doubt while a goal is being created."""
    with os.scandir(kb_root) as listing:
        entries = list(listing)
    if any(e.name.startswith(STAGING_PREFIX) for e in entries):
        raise Doubt("a goal is being created")
    return sorted(e.name for e in entries if defined_folder(e))


def index_is_current(kb_root: Path, state_dir: Path, db_file: Path) -> bool:
    """True only when nothing the KB index reads changed since a sync recorded its stamp,
    and that sync's database is still ``db_file`` (stat and ``scandir`` only; no parsing)."""
    root = Path(kb_root).expanduser().resolve()
    try:
        kept = json.loads((Path(state_dir) / STAMP_FILE).read_bytes())
        if (
            kept["complete"] is not True
            or kept["version"] != _VERSION
            or kept["kb_root"] != str(root)
            or kept["db"] != _db_identity(db_file)
            or not _matches(root, kept["config"], _config_rows(root))
        ):
            return False
        goals: dict[str, Print | None] = kept["goals"]
        if sorted(goals) != _goal_folders(root):
            return False
        for goal_id, print_ in goals.items():
            if not _matches(root / goal_id, print_, _rows(root / goal_id)):
                return False
        token = kept["token"]
        if not isinstance(token, str):
            return False
        # and the database agrees (one that cannot be read does not)
        return read_snapshot(db_file, partial(_db_agrees, token=token)) is True
    except (OSError, ValueError, KeyError, TypeError, AttributeError, Doubt):
        return False


@dataclass
class Stamp:
    """What one sync read, taken as it reads (``db_file`` None: not a SQLite file, nothing is
    stamped): the prints, each taken before the files it covers are read, the goals the sync
    forgot, and the token it writes into the database with the index (``previous``: the
    token it replaced there)."""

    kb_root: Path
    state_dir: Path
    db_file: Path | None
    config: Print | None = None
    goals: dict[str, Print | None] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    previous: str | None = None

    def __post_init__(self) -> None:
        if self.db_file is not None:  # before the sync reads goalsui.yaml
            self.config = _print(self.kb_root, _config_rows)  # absent: no rows

    def take(self, goal_id: str) -> None:
        """Print a goal tree before the sync reads it."""
        if self.db_file is not None:
            self.goals[goal_id] = _print(self.kb_root / goal_id, _rows)

    def record(self, *, partial: bool) -> None:
        """After the commit: write the stamp (on failure remove it: never current)."""
        if self.db_file is None:
            return
        try:
            content = self._content(self.db_file, partial)
            atomic_write(self.state_dir / STAMP_FILE, json.dumps(content, separators=(",", ":")))
        except OSError:
            with contextlib.suppress(OSError):
                forget(self.state_dir)

    def _content(self, db_file: Path, partial: bool) -> dict[str, Any]:
        """The stamp of this sync. A partial sync keeps the other goals' prints only when the
        stamp was the previous sync's and ``goalsui.yaml`` is unchanged (their rows may
        depend on it)."""
        new: dict[str, Any] = {
            "version": _VERSION,
            "kb_root": str(Path(self.kb_root).expanduser().resolve()),
            "db": _db_identity(db_file),
            "token": self.token,
            "config": self.config,
            "goals": {},
            "complete": True,
        }
        if partial:
            try:
                old = json.loads((self.state_dir / STAMP_FILE).read_bytes())
                same = old["complete"] is True
                same = same and all(old[k] == new[k] for k in ("version", "kb_root", "db"))
                same = same and self.previous is not None and old["token"] == self.previous
                same = (
                    same and self.config is not None and old["config"]["sum"] == self.config["sum"]
                )
            except (OSError, ValueError, KeyError, TypeError):
                same = False
            if same:
                new["goals"] = dict(old["goals"])
            else:  # the other goals' rows are not vouched for: never current until a full sync
                new["complete"] = False
        new["goals"].update(self.goals)
        for goal_id in self.removed:
            new["goals"].pop(goal_id, None)
        return new


def forget(state_dir: Path) -> None:
    """Remove the stamp (the index then counts as not current until the next sync)."""
    with contextlib.suppress(FileNotFoundError):
        (Path(state_dir) / STAMP_FILE).unlink()
