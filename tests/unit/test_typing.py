"""The type checker's escape hatches stay few and explained, in goalsui/ and tests/ alike (mypy
itself runs over both in scripts/test.sh, with warn_unused_ignores)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
IGNORE = re.compile(r"#\s*type:\s*ignore")
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(?:,\s*[a-z-]+)*\]  # \S")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    unexplained = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for root in ("goalsui", "tests")
        for path in sorted((REPO / root).rglob("*.py"))
        if "migrations/versions" not in path.as_posix() and path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if IGNORE.search(line) and not EXPLAINED.search(line)
    ]
    assert unexplained == []


def test_the_pattern_tells_an_explained_ignore_from_a_bare_one() -> None:
    assert EXPLAINED.search("x = f()  # type: ignore[attr-defined]  # set by the library")
    assert not EXPLAINED.search("x = f()  # type: ignore[attr-defined]")
    assert not EXPLAINED.search("x = f()  # type: ignore  # no code")
