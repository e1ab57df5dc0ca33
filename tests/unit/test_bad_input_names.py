"""Hostile goal and worker names, event sources and KB paths (``..``, absolute, symlinks
out, Unicode look-alikes, NUL): either refused with one clear line, or confined to the
KB; nothing on disk or in the database changes on a refusal."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goalsui.domain.names import NAME_RE, check_name
from goalsui.errors import GoalsuiError, ValidationError
from goalsui.kb.layout import WorkerSeed
from goalsui.kb.paths import safe_join
from goalsui.service import Service
from tests.base_kit import REPO, FakeClock
from tests.hooks_kit import row_counts, tree_snapshot

GOAL = "nightshift-979afc6e"
FAST = settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
SLOWER = settings(max_examples=80, deadline=3000, suppress_health_check=[HealthCheck.too_slow])

BAD_NAMES = [
    "",
    ".",
    "..",
    "../etc",
    "a/b",
    "a\\b",
    "/abs",
    "nightshift-979afc6e/..",
    "a\x00b",
    "a\nb",
    "A",
    "Ab",
    "-a",
    "a-",
    "_a",
    "a b",
    "a" * 65,
    "a\uff0fb",
    "a\u2215b",
    "a\u2044b",
    "\uff41",
    "ａｂｃ",
    "ｎightshift",
    "scout\u200b",
    "sco\u0301ut",
    "scoüt",
    "\u202escout",
    "con:",
    "*",
    "a%2fb",
]
SEGMENTS = [
    "..",
    ".",
    "",
    "/",
    "\\",
    "out",
    "a",
    "log",
    "workers",
    "\x00",
    "\uff0e\uff0e",
    "\uff0f",
    "\u2215",
    "\u2044",
    "~",
    "%2e%2e",
    "link-out",
    "C:",
    "//",
    "definition.yaml",
]


def one_line(exc: BaseException) -> None:
    assert isinstance(exc, GoalsuiError)
    assert str(exc) and "\n" not in str(exc) and "\x00" not in str(exc)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_name(name, "goal id")
    one_line(caught.value)


@FAST
@given(st.one_of(st.text(max_size=70), st.text(st.characters(codec=None), max_size=10)))
def test_any_name_is_valid_ascii_or_refused(name: str) -> None:
    try:
        check_name(name, "worker name")
    except ValidationError as exc:
        one_line(exc)
        return
    assert NAME_RE.fullmatch(name) and name.isascii() and "/" not in name and ".." not in name


@pytest.fixture(scope="module")
def jail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root with a symlink leading out of it, and the outside folder."""
    base = tmp_path_factory.mktemp("jail")
    root, outside = base / "root", base / "outside"
    (root / "a" / "log").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    os.symlink(outside, root / "link-out")
    os.symlink(outside / "secret.txt", root / "a" / "log" / "link-out")
    return root, outside


@FAST
@given(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=8))
def test_any_path_stays_inside_the_root_or_is_refused(
    jail: tuple[Path, Path], segments: list[str]
) -> None:
    root, _ = jail
    rel = "/".join(segments) if segments[0] != "" else "".join(segments)
    try:
        path = safe_join(root, rel)
    except ValidationError as exc:
        one_line(exc)
        return
    real_root = root.resolve()
    assert path.resolve() == real_root or real_root in path.resolve().parents


# --- through the service ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def names_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("names")
    shutil.copytree(REPO / "sample_kb", root / "kb")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    os.symlink(outside, root / "kb" / GOAL / "link-out")
    service = Service.open(root / "kb", None, root / "state", clock=FakeClock())
    yield service
    service.close()


def calls(name: str) -> list:
    """Every service entry point that takes a goal id, worker name or event source."""
    return [
        lambda s: s.goals.get(name),
        lambda s: s.goals.pause(name),
        lambda s: s.goals.delete(name),
        lambda s: s.files.read(name, "definition.yaml"),
        lambda s: s.files.write(name, "notes.md", "pwned"),
        lambda s: s.workers.intent(GOAL, name),
        lambda s: s.workers.run_now(name, "scout"),
        lambda s: s.workers.run_now(GOAL, name),
        lambda s: s.workers.update(GOAL, name, timeout="5m"),
        lambda s: s.intents.create(title="t", kind="event", event_source=name),
        lambda s: s.intents.create(title="t", kind="heartbeat", goal_id=name),
        lambda s: s.events.emit(name, {"x": 1}, "d-1"),
        lambda s: s.goals.create(
            "New goal", "task", [WorkerSeed(name, {"schedule": {"every": "10m"}})]
        ),
    ]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_service_refuses_bad_names_and_changes_nothing(names_service: Service, name: str) -> None:
    service = names_service
    rows, tree = row_counts(service), tree_snapshot(service.kb.root)
    for call in calls(name):
        with pytest.raises(GoalsuiError) as caught:
            call(service)
        one_line(caught.value)
    assert row_counts(service) == rows
    assert tree_snapshot(service.kb.root) == tree


@SLOWER
@given(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map("/".join))
def test_service_file_access_is_confined(names_service: Service, rel: str) -> None:
    service = names_service
    tree = tree_snapshot(service.kb.root)
    for read in (service.files.read, service.files.list):
        try:
            read(GOAL, rel)
        except GoalsuiError as exc:
            one_line(exc)
    assert tree_snapshot(service.kb.root) == tree


@pytest.mark.parametrize(
    "rel",
    [
        "../x.md",
        "/tmp/x.md",
        "link-out/secret.txt",
        "link-out/new.md",
        "a\x00b.md",
        "log\uff0fx.md",
        "..\u2215x.md",
        "\uff0e\uff0e/x.md",
        "workers/../../x.md",
    ],
)
def test_kb_write_outside_is_refused(names_service: Service, rel: str) -> None:
    service = names_service
    outside = service.kb.root.parent / "outside"
    before_out, tree = tree_snapshot(outside), tree_snapshot(service.kb.root)
    with pytest.raises(GoalsuiError) as caught:
        service.files.write(GOAL, rel, "pwned\n")
    one_line(caught.value)
    assert tree_snapshot(outside) == before_out
    assert tree_snapshot(service.kb.root) == tree
