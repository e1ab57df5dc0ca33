"""Themes are data: YAML files in the repo's ``themes/`` and the user's theme folder, each
validated at load time so a bad colour is reported with its file name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from textual.theme import Theme

from goalsui.bundled import find_themes_dir

DEFAULT_THEME = "goalsui-dark"

#: Used when the themes folder is missing from an installation, and for the first frame
#: (before the theme files are read). Equal to ``themes/goalsui-dark.yaml`` (tested).
FALLBACK = Theme(
    name=DEFAULT_THEME,
    dark=True,
    primary="#5aa7e8",
    secondary="#7f95b0",
    accent="#c3a6f2",
    foreground="#dde3ea",
    background="#10151c",
    surface="#171d26",
    panel="#212936",
    warning="#f0b24a",
    error="#f2605a",
    success="#5cd18a",
    variables={
        "footer-key-foreground": "#5aa7e8",
        "border": "#5aa7e8",
        "border-blurred": "#2f3a4a",
        "block-cursor-text-style": "none",
        "block-cursor-foreground": "#10151c",
        "input-selection-background": "#5aa7e8 35%",
        "scrollbar": "#2f3a4a",
        "scrollbar-hover": "#40506a",
        "scrollbar-active": "#5aa7e8",
    },
)


@dataclass
class LoadedThemes:
    themes: list[Theme] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.themes]


def theme_dirs() -> list[Path]:
    """The bundled themes folder, then the user's (``<config>/goalsui/themes``)."""
    from platformdirs import user_config_path

    bundled = find_themes_dir()
    return [*([bundled] if bundled is not None else []), user_config_path("goalsui") / "themes"]


def user_theme_files() -> bool:
    """True when the user's theme folder has theme files (one may replace a bundled one)."""
    folder = theme_dirs()[-1]
    return folder.is_dir() and any(
        p.suffix in (".yaml", ".yml") for p in folder.iterdir() if p.is_file()
    )


def load_theme_file(path: Path) -> Theme:
    """One theme file; raises ValueError with a short reason."""
    import yaml

    try:
        # the C loader when PyYAML has it: the same safe subset, parsed before the first frame
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValueError(f"{where}bad YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(data, dict):
        raise ValueError("expected a mapping with at least 'name' and 'primary'")
    if not isinstance(data.get("name"), str) or not data["name"].strip():
        raise ValueError("missing 'name'")
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ValueError("'variables' must be a mapping")
    data["variables"] = {str(k): str(v) for k, v in variables.items()}
    try:
        theme = Theme(**data)
        theme.to_color_system()
    except TypeError as exc:
        raise ValueError(f"unknown field ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - ColorParseError and friends: one line each
        raise ValueError(" ".join(str(exc).split())[:160]) from None
    return theme


def load_themes(dirs: list[Path] | None = None) -> LoadedThemes:
    """Every theme in ``dirs`` (later folders override earlier names), with all problems."""
    result = LoadedThemes()
    by_name: dict[str, Theme] = {}
    for folder in dirs if dirs is not None else theme_dirs():
        if not folder.is_dir():
            continue
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            try:
                theme = load_theme_file(path)
            except ValueError as exc:
                result.problems.append(f"{path.name}: {exc}")
                continue
            by_name[theme.name] = theme
    if DEFAULT_THEME not in by_name:
        by_name[DEFAULT_THEME] = FALLBACK
    result.themes = list(by_name.values())
    return result
