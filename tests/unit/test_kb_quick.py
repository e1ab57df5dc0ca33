"""The KB reads the console makes before the service is open: the goal folders for the
first frame (goalsui.kb.quick) and the console's settings (goalsui.kb.ui_settings)."""

from __future__ import annotations

from pathlib import Path

from goalsui.kb.quick import read_goal
from goalsui.kb.ui_settings import read_ui_settings


def test_ui_settings_are_read_only_from_a_good_file_inside_the_kb(tmp_path: Path) -> None:
    kb, outside = tmp_path / "kb", tmp_path / "outside.yaml"
    kb.mkdir()
    assert read_ui_settings(kb) == {}  # no file
    (kb / "goalsui.yaml").write_text("theme: goalsui-light\nkeymap: {pause: P}\nretry: {}\n")
    assert read_ui_settings(kb) == {"theme": "goalsui-light", "keymap": {"pause": "P"}}
    (kb / "goalsui.yaml").write_text("theme: [goalsui-light\n")
    assert read_ui_settings(kb) == {}  # broken: KB.config() reports it
    (kb / "goalsui.yaml").unlink()
    outside.write_text("theme: evil\n")
    (kb / "goalsui.yaml").symlink_to(outside)
    assert read_ui_settings(kb) == {}


def test_a_definition_needing_a_full_parse_gets_the_strict_rules(tmp_path: Path) -> None:
    goal = tmp_path / "g1"
    (goal / "workers" / "w").mkdir(parents=True)
    (goal / "workers" / "w" / "definition.yaml").write_text("schedule: {every: 5m}\n")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    (goal / "definition.yaml").write_text(laughs + "name: *h\nstatus: paused\n")
    found = read_goal(goal)
    assert found.name == "g1"  # the alias is refused, not expanded into a huge name
    assert [w.name for w in found.workers] == ["w"]
    (goal / "definition.yaml").write_text('name: "Quoted \\"name\\""\nstatus: paused\n')
    found = read_goal(goal)
    assert (found.name, found.status) == ('Quoted "name"', "paused")
