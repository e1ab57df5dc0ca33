"""The bundled sample KB and themes: shipped in the wheel, copied whole for demo and init."""

from __future__ import annotations

import tomllib
from pathlib import Path

from goalsui.bundled import find_sample_kb, find_themes_dir
from goalsui.demo import make_demo_kb
from goalsui.kb.layout import KB, init_kb

REPO = Path(__file__).resolve().parent.parent.parent


def test_wheel_force_includes_sample_kb_and_themes() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert include == {"themes": "goalsui/_data/themes", "sample_kb": "goalsui/_data/sample_kb"}
    for source in include:
        assert (REPO / source).is_dir()
    assert find_sample_kb().is_dir() and find_themes_dir() is not None


def test_demo_and_init_copy_the_whole_layout(tmp_path: Path) -> None:
    # bytecode pip compiles inside the installed sample must not travel along
    pycache = find_sample_kb() / "nightshift-979afc6e" / "workers" / "scout" / "__pycache__"
    created = not pycache.exists()
    pycache.mkdir(exist_ok=True)
    try:
        demo = make_demo_kb(tmp_path / "demo")
        init = init_kb(tmp_path / "init", sample=True)
    finally:
        if created:
            pycache.rmdir()
    for kb in (demo, init):
        assert not list(kb.rglob("__pycache__")) and not list(kb.rglob(".keep"))
        for loaded in KB(kb).scan():
            assert loaded.problems == []
            assert (loaded.path / "log").is_dir() and (loaded.path / "reports").is_dir()
            for name in loaded.workers:
                for box in ("inbox", "outbox"):
                    assert (loaded.path / "workers" / name / box).is_dir()
