"""The KB index stamp: current right after a sync, not current after any change the index
reads (or a doubt), still current after changes it never reads; checked without the ORM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from goalsui.kb import authoring, layout
from goalsui.kb.layout import KB
from goalsui.service import Service, index_stamp
from goalsui.service.index_stamp import STAMP_FILE, index_is_current

GOAL, WORKER = "docs-review-bfb1526f", "editor"


def _current(service: Service) -> bool:
    return index_is_current(service.kb.root, service.state_dir, service.state_dir / "goalsui.db")


def _append(path: Path, text: str = "# touched\n") -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def opened(sample_kb: Path, make_service: Callable[..., Service]) -> Service:
    service = make_service(sample_kb)
    assert _current(service)  # Service.open synced the whole KB and recorded the stamp
    return service


def _replace_db(service: Service) -> None:
    db = service.state_dir / "goalsui.db"
    shutil.copy2(db, db.with_name("copy.db"))
    os.replace(db.with_name("copy.db"), db)  # same content, another file


def _add_goal(service: Service) -> None:
    shutil.copytree(service.kb.root / GOAL, service.kb.root / "docs-review-copy")


def _staging(service: Service) -> None:
    (service.kb.root / f"{layout.STAGING_PREFIX}new-goal-{os.getpid()}-abcdef").mkdir()


def _link_prompt(service: Service) -> None:
    prompt = service.kb.root / GOAL / "workers" / WORKER / "prompt.md"
    prompt.rename(prompt.with_name("real.md"))
    prompt.symlink_to("real.md")


CHANGES: dict[str, Callable[[Service], object]] = {
    "worker definition": lambda s: _append(
        s.kb.root / GOAL / "workers" / WORKER / "definition.yaml"
    ),
    "goal definition": lambda s: _append(s.kb.root / GOAL / "definition.yaml"),
    "goal state": lambda s: _append(s.kb.root / GOAL / "state.yaml"),
    "worker prompt": lambda s: _append(s.kb.root / GOAL / "workers" / WORKER / "prompt.md"),
    "new YAML file": lambda s: (s.kb.root / GOAL / "notes.yaml").write_text("a: 1\n"),
    "added goal": _add_goal,
    "removed worker": lambda s: shutil.rmtree(s.kb.root / GOAL / "workers" / WORKER),
    "new worker folder": lambda s: (s.kb.root / GOAL / "workers" / "log").mkdir(),
    "removed goal": lambda s: shutil.rmtree(s.kb.root / GOAL),
    "goalsui.yaml": lambda s: _append(s.kb.root / "goalsui.yaml"),
    "replaced database": _replace_db,
    "deleted database": lambda s: (s.state_dir / "goalsui.db").unlink(),
    "goal being created": _staging,
    "symlinked prompt": _link_prompt,
    "no stamp": lambda s: (s.state_dir / STAMP_FILE).unlink(),
    "broken stamp": lambda s: (s.state_dir / STAMP_FILE).write_text("{"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_the_index_reads_is_not_current(opened: Service, change: str) -> None:
    CHANGES[change](opened)
    assert not _current(opened)


NOT_READ: dict[str, Callable[[Path], object]] = {
    "goal log": lambda g: _append(g / "log" / "goal.log", "a line\n"),
    "report": lambda g: (g / "reports" / "today.yaml").write_text("x: 1\n"),
    "inbox": lambda g: (g / "workers" / WORKER / "inbox" / "m.yaml").write_text("m: 1\n"),
    "outbox": lambda g: (g / "workers" / WORKER / "outbox" / "m.md").write_text("m\n"),
    "protocol": lambda g: _append(g / "protocol.md"),
    "scratch file": lambda g: (g / "workers" / WORKER / "notes.md").write_text("n\n"),
    "hidden temp file": lambda g: (g / ".state.yaml.x1.tmp").write_text("t\n"),
}


@pytest.mark.parametrize("change", sorted(NOT_READ))
def test_a_change_the_index_never_reads_keeps_it_current(opened: Service, change: str) -> None:
    goal = opened.kb.root / GOAL
    for folder in ("log", "reports", f"workers/{WORKER}/inbox", f"workers/{WORKER}/outbox"):
        (goal / folder).mkdir(parents=True, exist_ok=True)
    NOT_READ[change](goal)
    assert _current(opened)


def test_a_partial_sync_after_an_edit_is_current_again(opened: Service) -> None:
    _append(opened.kb.root / GOAL / "workers" / WORKER / "definition.yaml")
    assert not _current(opened)
    opened.index.sync([GOAL])
    assert _current(opened)
    stamp = json.loads((opened.state_dir / STAMP_FILE).read_text())
    assert sorted(stamp["goals"]) == KB(opened.kb.root).goal_ids()  # the others were kept


def test_a_partial_sync_after_goalsui_yaml_changed_is_not_current(opened: Service) -> None:
    _append(opened.kb.root / "goalsui.yaml")
    opened.index.sync([GOAL])  # the other goals' rows may depend on goalsui.yaml
    assert not _current(opened)
    opened.index.sync()
    assert _current(opened)


def test_a_removed_goal_is_current_after_a_sync(opened: Service) -> None:
    shutil.rmtree(opened.kb.root / GOAL)
    opened.index.sync([GOAL])
    assert _current(opened)


def test_an_edit_while_the_sync_reads_is_not_current(
    opened: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The print is taken before the files are read: an edit in between shows later."""
    load = opened.kb.load_goal

    def edited_then_loaded(goal_id: str) -> layout.LoadedGoal:
        _append(opened.kb.root / goal_id / "definition.yaml")
        return load(goal_id)

    monkeypatch.setattr(opened.kb, "load_goal", edited_then_loaded)
    opened.index.sync([GOAL])
    monkeypatch.undo()
    assert not _current(opened)


def test_another_sync_of_the_database_is_not_current(
    opened: Service, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    """Another service (its own state folder) synced the same database since."""
    db = opened.state_dir / "goalsui.db"
    other = Service.open(opened.kb.root, f"sqlite:///{db}", tmp_path / "other-state")
    try:
        assert not _current(opened)
        assert index_is_current(opened.kb.root, tmp_path / "other-state", db)
    finally:
        other.close()


def test_a_worker_resumed_while_its_goal_is_paused_is_not_current(opened: Service) -> None:
    """The next sync would pause it again: the index and the files disagree."""
    opened.goals.pause(GOAL)
    assert _current(opened)  # the pause wrote the definition and synced the goal
    intent = opened.workers.intent(GOAL, WORKER)
    assert intent.id is not None
    opened.intents.resume(intent.id)
    assert not _current(opened)
    opened.index.sync([GOAL])
    assert opened.workers.intent(GOAL, WORKER).status == "paused"
    assert _current(opened)


def test_the_stamp_names_what_the_index_reads() -> None:
    """Its folder and staging rules are the KB's (kept apart so no YAML parser loads; the
    index takes its hold rule, ``GOAL_HOLDS``, from the stamp)."""
    assert index_stamp.NOT_READ == authoring._NOT_VALIDATED
    assert index_stamp.STAGING_PREFIX == layout.STAGING_PREFIX


def test_the_check_loads_no_database_stack(opened: Service) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from goalsui.service.index_stamp import index_is_current\n"
        f"state = Path({str(opened.state_dir)!r})\n"
        f"print(index_is_current(Path({str(opened.kb.root)!r}), state, state / 'goalsui.db'))\n"
        "heavy = ('sqlalchemy', 'sqlmodel', 'pydantic')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == ["True", "[]"]
