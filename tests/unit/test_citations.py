"""Every repository path and docs section cited in the code and the docs exists.

Where citations are looked for: the text of every file of ``goalsui/`` (code, docstrings,
comments, templates), ``tests/`` and ``scripts/`` (``.py``, ``.sh``), ``pyproject.toml``,
``docs/*.md``, README.md and SECURITY.md. This file is left out: it shows the forms.

What counts as a citation:

- **A path**: a token that starts with one of the repository's top folders (``goalsui/``,
  ``tests/``, ``docs/``, ``scripts/``, ``sample_kb/``) not glued to a word, dot or slash
  before it (so ``~/.config/goalsui/x`` and ``.goalsui/`` are not citations), made of
  letters, digits and ``_ . - /``. It must exist relative to the repository root (file or
  folder), or be one of the few named in ``NOT_IN_THE_REPOSITORY`` with the reason (the
  wheel's ``goalsui/_data``). A token followed by ``*``, ``{``, ``<`` or ``$`` is a
  pattern (``tests/*_kit.py``), not a citation; a pytest node id's ``::name`` and
  trailing punctuation are dropped.
- **A section**: ``docs/NAME.md`` followed by ``, "Heading"`` or `` ("Heading")``; and,
  inside a ``docs/*.md`` file, ``see "Heading"`` for a heading of that same file. The
  quoted text must equal a heading of the file (``#`` to ``######``, outside fenced
  code), with or without its backticks. A line break inside a citation, and a comment's
  ``#`` or ``#:`` that continues it on the next line, read as one space.

An unquoted mention (``docs/architecture.md, the layers``) names only the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
TOP_FOLDERS = ("goalsui", "tests", "docs", "scripts", "sample_kb")
CODE_SUFFIXES = {".py", ".sh", ".md", ".yaml", ".yml", ".toml", ".tcss", ".txt"}

#: paths that are cited but are not (and need not be) in the repository, and why
NOT_IN_THE_REPOSITORY = {
    "goalsui/_data": "the wheel's copies of themes/ and sample_kb/ (pyproject.toml, force-include)",
    "goalsui/store/migrations/versions/0001": "a file-name prefix (the first revision's file)",
}

PATH = re.compile(r"(?<![\w.@/~$-])((?:" + "|".join(TOP_FOLDERS) + r")/[\w./-]*)")
PATTERN_CHARS = "*{<$"
SECTION = re.compile(r"(?<![\w./-])(docs/[\w-]+\.md)(?:,\s*|\s*\(\s*)[\"“]([^\"”\n]+)[\"”]")
SELF_SECTION = re.compile(r"\b[Ss]ee [\"“]([^\"”\n]+)[\"”]")
# a line break, with the comment marker (``#``, ``#:``) that continues a comment after it
LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*(?:#:?[ \t]*)?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def sources() -> Iterator[Path]:
    for name in ("README.md", "SECURITY.md", "pyproject.toml"):
        yield REPO / name
    yield from sorted((REPO / "docs").glob("*.md"))
    for folder in ("goalsui", "tests", "scripts"):
        for path in sorted((REPO / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in CODE_SUFFIXES
                and "__pycache__" not in path.parts
                and path.resolve() != Path(__file__).resolve()
            ):
                yield path


def elsewhere(cited: str) -> bool:
    return any(cited == p or cited.startswith(p + "/") for p in NOT_IN_THE_REPOSITORY)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def path_citations(text: str) -> Iterator[tuple[int, str]]:
    for match in PATH.finditer(text):
        end = match.end()
        if end < len(text) and text[end] in PATTERN_CHARS:
            continue
        cited = match.group(1).split("::")[0].rstrip(".,;:")
        yield match.start(), cited


def joined(text: str) -> tuple[str, list[int]]:
    """``text`` with each line break (and a comment's continuation marker) read as one space;
    and, for each character of the result, its offset in ``text``."""
    out: list[str] = []
    where: list[int] = []
    last = 0
    for match in LINE_BREAK.finditer(text):
        out.append(text[last : match.start()])
        where.extend(range(last, match.start()))
        out.append(" ")
        where.append(match.start())
        last = match.end()
    out.append(text[last:])
    where.extend(range(last, len(text)))
    return "".join(out), where


@cache
def headings(doc: Path) -> frozenset[str]:
    found: set[str] = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            found.add(match.group(1))
            found.add(match.group(1).replace("`", ""))
    return frozenset(found)


def section_citations(path: Path, text: str) -> Iterator[tuple[int, str, str]]:
    """(offset, cited doc relative to the root, heading) for each section citation."""
    flat, where = joined(text)
    for match in SECTION.finditer(flat):
        yield where[match.start()], match.group(1), " ".join(match.group(2).split())
    if path.parent == REPO / "docs":
        own = path.relative_to(REPO).as_posix()
        for match in SELF_SECTION.finditer(flat):
            yield where[match.start()], own, " ".join(match.group(1).split())


def stale_citations() -> list[str]:
    stale: list[str] = []
    for path in sources():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO).as_posix()
        for offset, cited in path_citations(text):
            if not (REPO / cited).exists() and not elsewhere(cited):
                stale.append(f"{name}:{line_of(text, offset)}: no such path {cited}")
        for offset, doc, heading in section_citations(path, text):
            where = f"{name}:{line_of(text, offset)}"
            if not (REPO / doc).is_file():
                stale.append(f"{where}: no such document {doc}")
            elif heading not in headings(REPO / doc):
                stale.append(f'{where}: {doc} has no section "{heading}"')
    return stale


def test_every_cited_path_and_section_exists() -> None:
    stale = stale_citations()
    assert not stale, f"{len(stale)} stale citations:\n" + "\n".join(stale)


def test_the_extraction_finds_what_it_should() -> None:
    text = (
        'see docs/architecture.md, "Time", and (docs/agents.md ("How a turn\n'
        '    # gets its tools")); tests/unit/test_citations.py::test_x. Patterns such\n'
        "as tests/*_kit.py, goalsui/{name}.py or ~/.config/goalsui/x are not citations."
    )
    assert [cited for _, cited in path_citations(text)] == [
        "docs/architecture.md",
        "docs/agents.md",
        "tests/unit/test_citations.py",
    ]
    sections = [(doc, heading) for _, doc, heading in section_citations(REPO / "x.py", text)]
    assert sections == [
        ("docs/architecture.md", "Time"),
        ("docs/agents.md", "How a turn gets its tools"),
    ]
    assert "How a turn gets its tools" in headings(REPO / "docs/agents.md")
    assert "What init creates" in headings(REPO / "docs/nightshift.md")
    # a comment inside a fenced block is not a heading
    assert "workers/pulse/definition.yaml" not in headings(REPO / "docs/operations.md")


def test_the_sources_include_security_md_and_every_tier() -> None:
    read = {p.relative_to(REPO).as_posix() for p in sources()}
    assert {"SECURITY.md", "README.md", "tests/conftest.py", "tests/base_kit.py"} <= read
    for tier in ("unit", "contract", "e2e", "tui"):
        assert f"tests/{tier}/conftest.py" in read
