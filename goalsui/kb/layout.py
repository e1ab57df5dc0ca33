"""The KB on disk: goal trees, their files, staging creation, and confined file access."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from goalsui.bundled import find_sample_kb
from goalsui.domain.names import check_name
from goalsui.domain.pids import pid_alive
from goalsui.domain.text import one_line
from goalsui.errors import GoalsuiError, KBError, NotFound, ValidationError
from goalsui.kb.atomic import atomic_write, fsync_dir
from goalsui.kb.authoring import (
    STATE_FILE,
    check_state_bytes,
    protocol_name,
    render_template,
    yaml_problems,
)
from goalsui.kb.config import (
    GoalDef,
    KBConfig,
    WorkerDef,
    parse_goal,
    parse_kb_config,
    parse_worker,
)
from goalsui.kb.confined import MAX_FILE_BYTES, ConfinedTree, goal_tree
from goalsui.kb.nightshift import BINDING_FILE, load_binding
from goalsui.kb.paths import CONFIG_FILE, goal_dir, new_goal_id, safe_join
from goalsui.kb.quick import defined_folder
from goalsui.kb.regular import read_text
from goalsui.kb.yamlio import dump_yaml, load_yaml_mapping, parse_yaml, roundtrip_update

T = TypeVar("T")

STAGING_PREFIX = ".staging-"
TRASH_PREFIX = ".trash-"
STAGING_MAX_AGE_S = 3600  # a staging folder older than this is a leftover whatever its pid


@dataclass
class LoadedGoal:
    """One goal tree as read from disk, with every problem found in it."""

    goal_id: str
    path: Path
    definition: GoalDef | None
    workers: dict[str, WorkerDef] = field(default_factory=dict)
    problems: list[KBError] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        return "; ".join(str(p) for p in self.problems) or None


@dataclass(frozen=True)
class WorkerSeed:
    """A worker to create: its definition, and its prompt or the instructions to render one."""

    name: str
    definition: dict[str, Any]
    prompt: str = ""
    instructions: str = ""

    def write(self, wdir: Path, goal_name: str, task: str, protocol: str) -> None:
        """The worker's folder: its mailboxes, definition and prompt (``prompt`` as given, else
        rendered from the instructions, the goal's task and the protocol's name)."""
        (wdir / "inbox").mkdir(parents=True)
        (wdir / "outbox").mkdir()
        text = dump_yaml(self.definition, f"worker '{self.name}' (goalsui)")
        atomic_write(wdir / "definition.yaml", text)
        none_yet = f"(none yet: describe what `{self.name}` does each tick)"
        prompt = self.prompt or render_template(
            "worker_prompt.md",
            worker=self.name,
            goal_name=goal_name,
            task=task.strip() or goal_name,
            instructions=self.instructions.strip() or none_yet,
            protocol_file="protocol.md",
            protocol_name=protocol_name(protocol, f"Protocol: {goal_name}"),
        )
        atomic_write(wdir / "prompt.md", prompt)


class KB:
    """A directory of goal trees; every path it touches stays inside ``root``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()
        self._state_limit: tuple[tuple[int, int] | None, int] | None = None

    # -- discovery -----------------------------------------------------------------
    def exists(self) -> bool:
        return self.root.is_dir()

    def display(self, path: Path) -> str:
        """``path`` relative to the KB root, as it was named (a symlink is not followed)."""
        path = Path(path)
        if path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        real = path.resolve()  # only when needed: realpath costs a stat per component
        return (
            real.relative_to(self.root).as_posix() if real.is_relative_to(self.root) else str(path)
        )

    def check_inside(self, path: Path, shown: str | None = None, below: Path | None = None) -> Path:
        """``path`` if it resolves inside the KB (``below``: a proven ancestor, to lstat only)."""
        if below is not None and _no_link_below(Path(path), below):
            return path
        if not Path(path).resolve().is_relative_to(self.root):
            raise KBError(shown or self.display(path), "a symlink here leads outside the KB")
        return path

    def config(self) -> KBConfig:
        """The KB-level config; defaults when ``goalsui.yaml`` is absent."""
        path = self.root / CONFIG_FILE
        if not path.exists() and not path.is_symlink():
            return KBConfig()
        self.check_inside(path, CONFIG_FILE)
        data, text = load_yaml_mapping(path, CONFIG_FILE)
        return parse_kb_config(data, text, CONFIG_FILE)

    def goal_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        return [entry.name for entry in entries if defined_folder(entry)]

    def goal_dir(self, goal_id: str) -> Path:
        return goal_dir(self.root, goal_id)

    def worker_dir(self, goal_id: str, worker: str) -> Path:
        check_name(worker, "worker name")
        path = safe_join(self.goal_dir(goal_id), "workers", worker)
        if not path.is_dir():
            raise NotFound(f"goal '{goal_id}' has no worker '{worker}'")
        return path

    def state_limit(self) -> int:
        """``state_max_bytes`` of goalsui.yaml (default if broken), re-read when it changed."""
        try:
            st = (self.root / CONFIG_FILE).stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        cached = self._state_limit
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            limit = self.config().state_max_bytes
        except GoalsuiError:
            limit = KBConfig().state_max_bytes
        self._state_limit = (stamp, limit)
        return limit

    def load_goal(self, goal_id: str) -> LoadedGoal:
        """Read and validate one goal tree; problems are collected, not raised."""
        loaded = self._load_tree(goal_id, self.goal_dir(goal_id))
        with contextlib.suppress(OSError):
            try:
                load_binding(loaded.path, display=f"{goal_id}/{BINDING_FILE}")
            except KBError as exc:
                loaded.problems.append(exc)
        limit = self.state_limit()
        loaded.problems.extend(yaml_problems(loaded.path, goal_id, limit, skip=(BINDING_FILE,)))
        return loaded

    def goal_definition(self, goal_id: str, path: Path | None = None) -> GoalDef:
        """The goal's ``definition.yaml``, validated (``path``: the goal's folder, by default
        the KB's, or its staging folder); a :class:`KBError` when it does not validate."""
        path = self.goal_dir(goal_id) if path is None else path
        shown = f"{goal_id}/definition.yaml"
        self.check_inside(path / "definition.yaml", shown, below=path)
        data, text = load_yaml_mapping(path / "definition.yaml", shown)
        return parse_goal(data, text, shown, goal_id)

    def _load_tree(self, goal_id: str, path: Path) -> LoadedGoal:
        """The definitions of the goal tree at ``path`` (its folder or its staging folder)."""
        loaded = LoadedGoal(goal_id, path, None)
        try:
            loaded.definition = self.goal_definition(goal_id, path)
        except KBError as exc:
            loaded.problems.append(exc)
        workers_root = path / "workers"
        if workers_root.is_symlink() and not workers_root.resolve().is_relative_to(self.root):
            loaded.problems.append(
                KBError(f"{goal_id}/workers", "a symlink here leads outside the KB")
            )
            return loaded
        if not workers_root.is_dir():
            return loaded
        for entry in sorted(os.scandir(workers_root), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            wpath = Path(entry.path) / "definition.yaml"
            shown = f"{goal_id}/workers/{entry.name}"
            if wpath.exists():
                shown += "/definition.yaml"
            try:
                check_name(entry.name, "worker name")
                self.check_inside(wpath, shown, below=path)
                data, text = load_yaml_mapping(wpath, shown)
                loaded.workers[entry.name] = parse_worker(entry.name, data, text, shown)
                self._check_prompt(Path(entry.path) / "prompt.md", path, goal_id)
            except GoalsuiError as exc:
                loaded.problems.append(
                    exc if isinstance(exc, KBError) else KBError(shown, str(exc))
                )
        return loaded

    def _check_prompt(self, prompt: Path, goal_path: Path, goal_id: str) -> None:
        """A worker's prompt.md, when there is one, must be readable UTF-8 text."""
        if not prompt.exists() and not prompt.is_symlink():
            return  # doctor reports a missing prompt; the worker still loads
        shown = f"{goal_id}/{prompt.relative_to(goal_path).as_posix()}"
        self.check_inside(prompt, shown, below=goal_path)
        read_text(prompt, limit=MAX_FILE_BYTES, display=shown)

    def scan(self) -> list[LoadedGoal]:
        """Every goal tree; one that cannot be loaded at all comes back with its problem."""
        out = []
        for gid in self.goal_ids():
            try:
                out.append(self.load_goal(gid))
            except GoalsuiError as exc:
                problem = exc if isinstance(exc, KBError) else KBError(gid, str(exc))
                out.append(LoadedGoal(gid, self.root / gid, None, problems=[problem]))
        return out

    # -- creation and removal --------------------------------------------------------
    def create_goal(
        self,
        name: str,
        task: str,
        workers: Iterable[WorkerSeed] = (),
        *,
        owner: str = "",
        protocol: str | None = None,
        register: Callable[[LoadedGoal], Callable[[], None]],
        files: Mapping[str, str] | None = None,
        _fail_after_workers: int | None = None,
    ) -> LoadedGoal:
        """Create a goal tree in staging and rename it into place; whole or not at all."""
        name, workers = _checked_seeds(name, workers)
        self.root.mkdir(parents=True, exist_ok=True)
        goal_id = new_goal_id(name)
        final = safe_join(self.root, goal_id)
        if final.exists():
            raise ValidationError(f"goal '{goal_id}' already exists")
        staging = safe_join(
            self.root, f"{STAGING_PREFIX}{goal_id}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        )
        identity = {"goal_id": goal_id, "name": name, "task": task, "owner": owner}
        undo: Callable[[], None] | None = None
        try:  # written, validated, registered and renamed into place; all undone on failure
            staging.mkdir()
            _write_goal_tree(staging, identity, workers, protocol, files, _fail_after_workers)
            loaded = self._load_tree(goal_id, staging)
            if loaded.problems:
                raise loaded.problems[0]
            undo = register(loaded)
            os.rename(staging, final)
            fsync_dir(self.root)
        except BaseException as exc:
            if undo is not None:
                with contextlib.suppress(Exception):
                    undo()
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise KBError(
                    goal_id, f"could not create the goal tree: {exc.strerror or exc}"
                ) from exc
            raise
        loaded.path = final
        with contextlib.suppress(OSError, GoalsuiError):  # the goal exists: a log hiccup is fine
            self.tree(goal_id).append_log(f"goal created: {name}")
        return loaded

    def delete_goal(self, goal_id: str) -> None:
        """Remove a goal tree (renamed aside first, so readers never see half of it)."""
        remove_tree(self.root, self.goal_dir(goal_id))

    def creating(self, goal_id: str) -> bool:
        """True while a live process is creating ``goal_id`` in a staging folder."""
        return any(gid == goal_id and live for _, gid, live in _staging_entries(self.root))

    def cleanup_leftovers(self) -> list[str]:
        """Remove staging and trash left by a crash (not a live process's); returns their names."""
        left = [entry for entry, _, live in _staging_entries(self.root) if not live]
        if self.root.is_dir():
            trash = (e for e in os.scandir(self.root) if e.name.startswith(TRASH_PREFIX))
            left += [entry for entry in trash if entry.is_dir(follow_symlinks=False)]
        for entry in left:
            shutil.rmtree(entry.path, ignore_errors=True)
        return [entry.name for entry in left]

    def set_goal_field(self, goal_id: str, **updates: Any) -> None:
        """Edit top-level fields of a goal's definition, keeping comments and key order."""
        shown = f"{goal_id}/definition.yaml"
        path = self.check_inside(self.goal_dir(goal_id) / "definition.yaml", shown)
        check = partial(parse_goal, display=shown, folder_name=goal_id)
        atomic_write(path, _edited(path, shown, check, updates)[1])

    # -- confined file access ----------------------------------------------------------
    def tree(self, goal_id: str) -> ConfinedTree:
        """One goal tree's files: no escape by path or symlink, ``log/`` append-only."""
        return goal_tree(self.root, goal_id)

    def kb_read(self, goal_id: str, rel: str) -> str:
        return self.tree(goal_id).read(rel)

    def check_text(self, goal_id: str, parts: tuple[str, ...], text: str, shown: str) -> None:
        """Refuse broken YAML, definitions that do not validate, a state.yaml over its bound."""
        if not parts or not parts[-1].endswith((".yaml", ".yml")):
            return
        data = parse_yaml(text, shown)
        is_goal_def = parts == ("definition.yaml",)
        is_worker_def = len(parts) == 3 and parts[0] == "workers" and parts[2] == "definition.yaml"
        if (is_goal_def or is_worker_def) and not isinstance(data, dict):
            raise KBError(shown, "expected a mapping at the top", 1)
        if is_goal_def:
            parse_goal(data, text, shown, goal_id)
        elif is_worker_def:
            check_name(parts[1], "worker name")
            parse_worker(parts[1], data, text, shown)
        elif parts == (STATE_FILE,):
            shown = f"{goal_id}/{STATE_FILE}"
            check_state_bytes(shown, len(text.encode("utf-8")), self.state_limit())

    # -- workers -------------------------------------------------------------------------
    def update_worker(
        self,
        goal_id: str,
        worker: str,
        *,
        schedule: dict[str, Any] | None = None,
        runner: dict[str, Any] | None = None,
        timeout: str | None = None,
        prompt: str | None = None,
    ) -> WorkerDef:
        """Edit a worker's schedule, runner, timeout or prompt, keeping comments and order."""
        wdir = self.worker_dir(goal_id, worker)
        shown = f"{goal_id}/workers/{worker}/definition.yaml"
        path = self.check_inside(wdir / "definition.yaml", shown)
        if prompt is not None:
            self.check_inside(wdir / "prompt.md", f"{goal_id}/workers/{worker}/prompt.md")
            if len(prompt.encode("utf-8")) > MAX_FILE_BYTES:
                raise ValidationError("prompt is too large")
        given = {"schedule": schedule, "runner": runner, "timeout": timeout}
        updates = {key: value for key, value in given.items() if value is not None}
        check = partial(parse_worker, worker, display=shown)
        text, new_text, definition = _edited(path, shown, check, updates)
        if new_text != text:  # an unchanged schedule writes nothing
            atomic_write(path, new_text)
        if prompt is not None and _text_or_none(wdir / "prompt.md") != prompt:
            atomic_write(wdir / "prompt.md", prompt)
        return definition

    def outbox_dir(self, goal_id: str, worker: str) -> Path:
        path = safe_join(self.worker_dir(goal_id, worker), "outbox")
        path.mkdir(exist_ok=True)
        return path


def _edited(
    path: Path, shown: str, check: Callable[[Any, str], T], updates: dict[str, Any]
) -> tuple[str, str, T]:
    """A definition's text and the text with ``updates``, both checked: a broken file is
    never rewritten, and an edit that breaks it is refused."""
    data, text = load_yaml_mapping(path, shown)
    check(data, text)
    new_text = roundtrip_update(text, updates, display=shown) if updates else text
    return text, new_text, check(parse_yaml(new_text, shown) or {}, new_text)


def _text_or_none(path: Path) -> str | None:
    """A small file's text as it is now (None when it cannot be read)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _checked_seeds(name: str, workers: Iterable[WorkerSeed]) -> tuple[str, list[WorkerSeed]]:
    """The goal's name (whitespace collapsed) and its worker seeds, checked."""
    too_long = "goal name is too long (200 characters at most)"
    name = one_line(name, 200, empty="a goal needs a name", too_long=too_long)
    seeds = list(workers)
    for index, seed in enumerate(seeds):
        check_name(seed.name, "worker name")
        if any(seed.name == earlier.name for earlier in seeds[:index]):
            raise ValidationError(f"worker '{seed.name}' given twice")
    return name, seeds


def _staging_entries(root: Path) -> list[tuple[os.DirEntry[str], str, bool]]:
    """Staging folders in ``root`` as (entry, goal_id, still being written by a live process)."""
    out: list[tuple[os.DirEntry[str], str, bool]] = []
    if not root.is_dir():
        return out
    for entry in os.scandir(root):
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        parts = entry.name[len(STAGING_PREFIX) :].rsplit("-", 2)
        live = len(parts) == 3 and parts[1].isdigit() and pid_alive(int(parts[1]))
        try:
            live = live and time.time() - entry.stat().st_mtime < STAGING_MAX_AGE_S
        except OSError:
            live = False
        out.append((entry, parts[0], live))
    return out


def _write_goal_tree(
    staging: Path,
    identity: dict[str, str],
    workers: list[WorkerSeed],
    protocol: str | None,
    files: Mapping[str, str] | None,
    fail_after_workers: int | None,
) -> None:
    """Every file of a new goal, in its staging folder (templates where nothing is given)."""
    name, task = identity["name"], identity["task"]
    now = datetime.now(UTC).replace(microsecond=0)
    definition = {**identity, "status": "active", "sort_order": 0, "created_at": now.isoformat()}
    atomic_write(
        staging / "definition.yaml",
        dump_yaml(definition, "goal identity (goalsui); edit name, task, owner freely"),
    )
    protocol = protocol or (files or {}).get("protocol.md")
    if not (protocol and protocol.strip()):  # purpose, message formats, conventions, KPIs
        protocol = render_template("protocol.md", goal_name=name, task=task.strip() or name)
    atomic_write(staging / "protocol.md", protocol)
    atomic_write(staging / STATE_FILE, render_template(STATE_FILE))
    (staging / "log").mkdir()
    (staging / "reports").mkdir()
    for index, seed in enumerate(workers):
        if fail_after_workers is not None and index >= fail_after_workers:
            raise OSError("injected failure while writing workers")
        seed.write(staging / "workers" / seed.name, name, task, protocol)
    for rel, text in (files or {}).items():
        target = safe_join(staging, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)


def remove_tree(root: Path, path: Path) -> None:
    """Remove ``path`` in ``root``, renamed aside first so readers never see half of it."""
    trash = root / f"{TRASH_PREFIX}{path.name}-{uuid.uuid4().hex[:6]}"
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return
    fsync_dir(root)
    shutil.rmtree(trash, ignore_errors=True)


def _no_link_below(path: Path, base: Path) -> bool:
    """``path`` is under ``base`` with no symlink (or missing component) after ``base``."""
    if not path.is_relative_to(base):
        return False
    current = base
    for part in path.relative_to(base).parts:
        if part in ("", ".", ".."):
            return False
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


#: Never copied out of the bundled sample: bytecode pip compiled, placeholder files.
SAMPLE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".keep")


def copy_sample_kb(target: Path) -> Path:
    """Copy the bundled sample KB to ``target`` (which may exist, empty), keeping its layout."""
    shutil.copytree(find_sample_kb(), target, dirs_exist_ok=True, ignore=SAMPLE_IGNORE)
    return target


def init_kb(path: Path, *, sample: bool = False) -> Path:
    """Create an empty KB (or a copy of the sample KB) at ``path``."""
    path = Path(path).expanduser()
    try:
        if path.exists() and not path.is_dir():
            raise ValidationError(f"cannot create a KB at {path}: it exists and is not a folder")
        if path.exists() and any(path.iterdir()):
            raise ValidationError(f"{path} exists and is not empty")
        if sample:
            copy_sample_kb(path)
        else:
            path.mkdir(parents=True, exist_ok=True)
            atomic_write(path / CONFIG_FILE, render_template("goalsui.yaml"))
        return path.resolve()
    except OSError as exc:
        raise ValidationError(f"cannot create a KB at {path}: {exc.strerror or exc}") from None
