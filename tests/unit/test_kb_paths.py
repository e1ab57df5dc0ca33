"""Path safety: names and paths that lead out of the KB are refused; nothing outside is touched.

Every test watches the process with an audit hook (``sys.addaudithook``): any file or
folder opened, listed, created, renamed or removed under the test's temporary folder but
outside the KB and the state folder fails the test, as does any access to ``/etc``. A
sentinel file outside the KB must keep its bytes and its folder its listing.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goalsui.domain.names import check_name
from goalsui.errors import GoalsuiError, KBError, NotFound, ValidationError
from goalsui.kb.layout import KB
from goalsui.kb.paths import safe_join
from goalsui.service import Service

GOAL = "nightshift-979afc6e"
SECRET = "top secret: never read me\n"

_WATCH: dict[str, Any] = {"on": False, "roots": (), "allowed": (), "hits": []}
_HOOKED = False
_EVENTS = {
    "open",
    "os.listdir",
    "os.scandir",
    "os.mkdir",
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.chmod",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
}


def _audit(event: str, args: tuple) -> None:
    if not _WATCH["on"] or event not in _EVENTS:
        return
    # os.symlink(src, dst) / os.link: only the new link's own location is written.
    targets = args[1:2] if event in ("os.symlink", "os.link") else args[:2]
    for arg in targets:
        if isinstance(arg, bytes):
            arg = os.fsdecode(arg)
        if not isinstance(arg, str | os.PathLike):
            continue
        try:
            real = Path(arg).resolve()
        except (OSError, ValueError, RuntimeError):
            continue
        inside_watched = any(real == r or r in real.parents for r in _WATCH["roots"])
        allowed = any(real == a or a in real.parents for a in _WATCH["allowed"])
        if inside_watched and not allowed:
            _WATCH["hits"].append((event, str(arg)))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the KB with a sentinel file in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    goal = folder / "goal"
    (goal / "workers" / "w").mkdir(parents=True)
    (goal / "definition.yaml").write_text(f"goal_id: evil\nname: Evil\n# {SECRET}")
    (goal / "workers" / "w" / "definition.yaml").write_text("schedule: {every: 1m}\n")
    return folder


@pytest.fixture
def armed(sample_kb: Path, outside: Path, tmp_path: Path) -> Iterator[dict]:
    """Plant symlinks that lead out of the KB, then watch every file access."""
    global _HOOKED
    goal = sample_kb / GOAL
    (goal / "link-out").symlink_to(outside)
    (goal / "secret-link.md").symlink_to(outside / "secret.txt")
    (goal / "dangling-out.md").symlink_to(outside / "nope.md")
    (sample_kb / "evil-goal").symlink_to(outside / "goal")
    (goal / "workers" / "evil").symlink_to(outside / "goal" / "workers" / "w")
    listing = sorted(p.name for p in outside.rglob("*"))
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _WATCH.update(
        on=True,
        roots=(tmp_path.resolve(), Path("/etc")),
        allowed=(sample_kb.resolve(), (tmp_path / "state").resolve()),
        hits=[],
    )
    try:
        yield _WATCH
    finally:
        _WATCH["on"] = False
    assert (outside / "secret.txt").read_text() == SECRET
    assert sorted(p.name for p in outside.rglob("*")) == listing


def assert_untouched(watch: dict) -> None:
    assert watch["hits"] == [], f"touched outside the KB: {watch['hits']}"


TRAVERSALS = [
    "..",
    "../..",
    "../goalsui.yaml",
    "log/../../goalsui.yaml",
    "workers/scout/../../../outside/secret.txt",
    "/etc/passwd",
    "//etc/passwd",
    "\\etc\\passwd",
    "C:\\Windows\\win.ini",
    "..\\..\\outside\\secret.txt",
    "link-out/secret.txt",
    "link-out",
    "secret-link.md",
    "dangling-out.md",
    "log/\x00../../x",
    "\uff0e\uff0e/\uff0e\uff0e/outside/secret.txt",  # fullwidth dots
    "\u2025/secret.txt",  # two-dot leader
    "workers\u2215scout",  # division slash
    "log\uff0f2026-11-30.md",  # fullwidth solidus
    "",
]


def test_kb_read_list_write_refuse_paths_out_of_the_goal(
    armed: dict, service: Service, sample_kb: Path
) -> None:
    before = sorted(str(p) for p in sample_kb.rglob("*"))
    for rel in TRAVERSALS:
        with pytest.raises(GoalsuiError):
            service.files.read(GOAL, rel)
        if rel:
            with pytest.raises(GoalsuiError):
                service.files.list(GOAL, rel)
        with pytest.raises(GoalsuiError):
            service.files.write(GOAL, rel, "pwned\n")
        assert_untouched(armed)
    assert sorted(str(p) for p in sample_kb.rglob("*")) == before


def test_kb_list_hides_symlinks_that_lead_out(armed: dict, service: Service) -> None:
    names = {entry["name"] for entry in service.files.list(GOAL)}
    assert {"definition.yaml", "workers", "log"} <= names
    assert not names & {"link-out", "secret-link.md", "dangling-out.md"}
    assert_untouched(armed)


def test_confined_access_still_works_inside(armed: dict, service: Service) -> None:
    service.files.write(GOAL, "notes/today.md", "# notes\n")
    assert service.files.read(GOAL, "notes/today.md") == "# notes\n"
    assert service.files.read(GOAL, "./notes//today.md") == "# notes\n"
    assert [e["path"] for e in service.files.list(GOAL, "notes")] == ["notes/today.md"]
    assert "scout" in {e["name"] for e in service.files.list(GOAL, "workers")}
    assert_untouched(armed)


BAD_NAMES = [
    "..",
    ".",
    "../outside",
    "../../etc",
    "/etc",
    "/tmp/x",
    "a/b",
    "a\\b",
    "nightshift-979afc6e/..",
    "x\x00",
    "\x00",
    "",
    "Nightshift",
    "nightshift\u2010979afc6e",  # unicode hyphen
    "nightshift-979afc6\u0435",  # Cyrillic e
    "\uff4e\uff49\uff47\uff48\uff54",  # fullwidth letters
    "sc\u043eut",  # Cyrillic o
    "-scout",
    "scout-",
    "scout\n",
    "a" * 65,
    "evil-goal",  # a symlink in the KB that leads out
]


def test_goal_ids_are_refused(armed: dict, service: Service) -> None:
    for name in BAD_NAMES:
        _refuse_goal_id(service, name)
    assert_untouched(armed)


def _refuse_goal_id(service: Service, name: str) -> None:
    for call in (
        lambda: service.goals.get(name),
        lambda: service.files.read(name, "definition.yaml"),
        lambda: service.files.list(name),
        lambda: service.files.write(name, "x.md", "pwned"),
        lambda: service.goals.pause(name),
        lambda: service.goals.delete(name),
        lambda: service.workers.run_now(name, "scout"),
        lambda: service.workers.update(name, "scout", prompt="pwned"),
    ):
        with pytest.raises((ValidationError, NotFound)):
            call()


def test_worker_names_are_refused(armed: dict, service: Service) -> None:
    for name in [*BAD_NAMES, "evil"]:
        with pytest.raises((ValidationError, NotFound)):
            service.workers.update(GOAL, name, prompt="pwned", timeout="1m")
        with pytest.raises((ValidationError, NotFound)):
            service.workers.run_now(GOAL, name)
    assert_untouched(armed)


def test_check_name_rules() -> None:
    for good in ("a", "0", "scout", "night-shift_2", "a" * 64, "nightshift-979afc6e"):
        assert check_name(good) == good
    for bad in BAD_NAMES[:-1]:
        with pytest.raises(ValidationError):
            check_name(bad)


def test_a_symlinked_definition_is_never_read(
    armed: dict, sample_kb: Path, outside: Path, make_service
) -> None:
    """A worker whose definition.yaml is a symlink out of the KB is a problem, not a read;
    the worker keeps its last good schedule."""
    service = make_service(sample_kb)
    good = service.workers.intent(GOAL, "librarian")
    wdef = sample_kb / GOAL / "workers" / "librarian" / "definition.yaml"
    wdef.unlink()
    wdef.symlink_to(outside / "secret.txt")
    problems = service.index.sync()
    assert [(p.path, p.message) for p in problems] == [
        (f"{GOAL}/workers/librarian/definition.yaml", "a symlink here leads outside the KB")
    ]
    assert [p.path for p in service.index.doctor()] == [f"{GOAL}/workers/librarian/definition.yaml"]
    kept = service.workers.intent(GOAL, "librarian")
    assert (kept.status, kept.next_run_at) == (good.status, good.next_run_at)
    with pytest.raises((ValidationError, KBError)):
        service.workers.update(GOAL, "librarian", timeout="1m")
    assert "evil-goal" not in {g.goal_id for g in service.goals.list()}
    assert_untouched(armed)


def test_a_symlink_that_stays_inside_the_kb_is_followed(sample_kb: Path, make_service) -> None:
    service = make_service(sample_kb)
    workers = sample_kb / GOAL / "workers"
    (workers / "librarian" / "definition.yaml").unlink()
    (workers / "librarian" / "definition.yaml").symlink_to(workers / "scout" / "definition.yaml")
    assert service.index.sync() == []
    librarian, scout = (service.workers.intent(GOAL, w) for w in ("librarian", "scout"))
    assert (librarian.schedule, librarian.timezone) == (scout.schedule, scout.timezone)


def test_symlinked_workers_folder_is_not_listed(
    armed: dict, sample_kb: Path, outside: Path, make_service
) -> None:
    goal = sample_kb / "blog-drafts-c24a3db0"
    service = make_service(sample_kb)
    good = service.workers.intent("blog-drafts-c24a3db0", "drafter")
    shutil.rmtree(goal / "workers")
    (goal / "workers").symlink_to(outside / "goal" / "workers")
    expected = [("blog-drafts-c24a3db0/workers", "a symlink here leads outside the KB")]
    assert [(p.path, p.message) for p in service.index.sync()] == expected
    assert [(p.path, p.message) for p in service.index.doctor()] == expected
    kept = service.workers.intent("blog-drafts-c24a3db0", "drafter")
    assert (kept.status, kept.next_run_at) == (good.status, good.next_run_at)
    assert_untouched(armed)


def test_symlinked_log_folder_is_not_appended_to(
    armed: dict, sample_kb: Path, outside: Path, service: Service
) -> None:
    goal = sample_kb / "docs-review-bfb1526f"
    for item in (goal / "log").iterdir():
        item.unlink()
    (goal / "log").rmdir()
    (goal / "log").symlink_to(outside)
    with pytest.raises(ValidationError):
        service.files.append_log("docs-review-bfb1526f", "hello")
    assert_untouched(armed)


def test_safe_join_resolves_and_confines(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    assert safe_join(root, "a", "b.txt") == root.resolve() / "a" / "b.txt"
    (root / "up").symlink_to(tmp_path)
    with pytest.raises(ValidationError):
        safe_join(root, "up/x")
    with pytest.raises(ValidationError):
        safe_join(root, "a", "../../x")


def test_kb_class_confines_goal_dir(sample_kb: Path, outside: Path) -> None:
    kb = KB(sample_kb)
    (sample_kb / "evil-goal").symlink_to(outside / "goal")
    assert "evil-goal" not in kb.goal_ids()
    with pytest.raises(ValidationError):
        kb.goal_dir("evil-goal")
