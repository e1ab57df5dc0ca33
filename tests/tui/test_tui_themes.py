"""Themes are YAML data: bundled ones, the user's own, and every broken file in one toast."""

from __future__ import annotations

from pathlib import Path

import pytest

from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.themes import DEFAULT_THEME, load_themes, theme_dirs
from tests.tui_kit import open_demo, settle

GOOD = """name: night-owl
dark: true
primary: "#7fdbca"
background: "#011627"
foreground: "#d6deeb"
success: "#addb67"
error: "#ef5350"
warning: "#ffcb8b"
"""


def test_bundled_themes_load_and_validate() -> None:
    loaded = load_themes()
    assert not loaded.problems
    assert {"goalsui-dark", "goalsui-light"} <= set(loaded.names)
    light = next(t for t in loaded.themes if t.name == "goalsui-light")
    assert light.dark is False


def test_broken_files_are_all_reported(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad-colour.yaml").write_text("name: x\nprimary: not-a-colour\n")
    (tmp_path / "bad-yaml.yaml").write_text("name: [unclosed\n")
    (tmp_path / "no-name.yml").write_text("primary: '#ffffff'\n")
    (tmp_path / "unknown-field.yaml").write_text("name: y\nprimary: '#ffffff'\nsparkle: true\n")
    loaded = load_themes([tmp_path])
    assert (
        "night-owl" in loaded.names and DEFAULT_THEME in loaded.names
    )  # the fallback is always there
    assert len(loaded.problems) == 4
    text = "\n".join(loaded.problems)
    for name in ("bad-colour.yaml", "bad-yaml.yaml", "no-name.yml", "unknown-field.yaml"):
        assert name in text
    assert "bad-yaml.yaml: line 2" in text


async def test_user_themes_are_picked_up_and_broken_ones_toasted(
    tmp_path: Path, clock, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    user = theme_dirs()[-1]
    assert user == tmp_path / "config" / "goalsui" / "themes"
    user.mkdir(parents=True)
    (user / "owl.yaml").write_text(GOOD)
    (user / "broken-1.yaml").write_text("name: b1\nprimary: nope\n")
    (user / "broken-2.yaml").write_text("name: [\n")
    service: Service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    app = make_app(service, scheduler=False, watch=False, clock=clock, theme="night-owl")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.theme == "night-owl"
        assert app.palette.ok == "#addb67"
        toasts = [n for n in app.notices if n.title == "Theme files skipped"]
        assert len(toasts) == 1
        assert "broken-1.yaml" in toasts[0].message and "broken-2.yaml" in toasts[0].message
        assert "night-owl" in app.theme_names
    service.close()


async def test_unknown_theme_falls_back(tmp_path: Path, clock, template: Path) -> None:
    service: Service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    app = make_app(service, scheduler=False, watch=False, clock=clock, theme="no-such-theme")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.theme == DEFAULT_THEME
        assert any("no-such-theme" in n.message for n in app.notices)
    service.close()


async def test_a_light_theme_wanted_at_start_styles_the_first_frame(
    tmp_path: Path, clock, template: Path
) -> None:
    """The first theme is set without its watcher: its classes and colours must still be in."""
    service: Service = open_demo(tmp_path / "kb", tmp_path / "state", clock, template)
    app = make_app(service, scheduler=False, watch=False, clock=clock, theme="goalsui-light")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        light = app.get_theme("goalsui-light")
        assert light is not None and light.background is not None
        assert app.theme == "goalsui-light" and app.current_theme is light
        assert app.has_class("-theme-goalsui-light", "-light-mode")
        assert not app.has_class("-dark-mode")
        assert app.screen.styles.background.hex.lower() == light.background.lower()
    service.close()
