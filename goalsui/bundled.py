"""Where the files shipped with goalsui are: the repository folders, or the copies
inside the wheel (``goalsui/_data``). Imports nothing heavy: the console's first frame
uses it."""

from __future__ import annotations

from pathlib import Path

from goalsui.errors import NotFound

PACKAGE = Path(__file__).resolve().parent


def bundled_dir(name: str) -> Path | None:
    """``<repository>/<name>`` or ``goalsui/_data/<name>``, whichever exists."""
    for candidate in (PACKAGE.parent / name, PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    return None


def find_sample_kb() -> Path:
    """The bundled sample KB."""
    found = bundled_dir("sample_kb")
    if found is None:
        raise NotFound("the bundled sample KB is missing from this installation")
    return found


def find_themes_dir() -> Path | None:
    """The bundled ``themes`` folder (None if an installation lacks it)."""
    return bundled_dir("themes")
