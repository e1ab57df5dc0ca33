"""No status compared with a string literal in goalsui/: the enums of
goalsui/domain/states.py (``RunStatus``, ``IntentStatus``, ``GoalStatus``, ...) are the
one spelling of a status (issue 30).

The scan reads every module of goalsui/ with :mod:`ast` and reports each comparison
(``==``, ``!=``, ``in``, ``not in``) with a name or attribute ending in ``status`` on one
side and a string constant, or a tuple, list or set of string constants, on the other.
SQL text is not Python comparisons, so it is not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent / "goalsui"

#: files that may still compare a status with a literal, with how many times; a ratchet:
#: this list may only shrink (a count that drops below its entry fails too)
EXCEPTIONS: dict[str, int] = {}

OPERATORS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def is_status(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id.lower().endswith("status")
    if isinstance(node, ast.Attribute):
        return node.attr.lower().endswith("status")
    return False


def is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return False


def literal_comparisons(tree: ast.AST) -> Iterator[ast.Compare]:
    """Each comparison of ``tree`` that compares a status with a string literal."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        pairs = pairwise([node.left, *node.comparators])
        for (left, right), op in zip(pairs, node.ops, strict=True):
            if not isinstance(op, OPERATORS):
                continue
            if (is_status(left) and is_literal(right)) or (is_status(right) and is_literal(left)):
                yield node
                break


def scan(root: Path = ROOT) -> dict[str, list[str]]:
    """Per file (relative to the repository), the comparisons found, as ``line: code``."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        hits = [
            f"{node.lineno}: {ast.get_source_segment(source, node)}"
            for node in literal_comparisons(ast.parse(source, filename=str(path)))
        ]
        if hits:
            found[path.relative_to(root.parent).as_posix()] = sorted(
                hits, key=lambda hit: int(hit.split(":")[0])
            )
    return found


def test_no_status_is_compared_with_a_literal() -> None:
    found = scan()
    problems = [
        f"{path}:{hit}" for path, hits in found.items() if path not in EXCEPTIONS for hit in hits
    ]
    assert not problems, (
        "compare statuses with the enums of goalsui/domain/states.py, not with literals:\n"
        + "\n".join(problems)
    )


def test_the_exceptions_only_shrink() -> None:
    found = scan()
    stale = [
        f"{path}: listed for {count}, has {len(found.get(path, []))}"
        for path, count in EXCEPTIONS.items()
        if len(found.get(path, [])) != count
    ]
    assert not stale, "update EXCEPTIONS (it may only shrink):\n" + "\n".join(stale)


def test_the_scan_finds_what_it_should() -> None:
    source = """
if run.status == "ok": pass
if status in ("failed", "timeout"): pass
if "active" != intent.status: pass
if last_status not in {"ok"}: pass
if a < run.status == "ok": pass
if run.status == RunStatus.OK: pass
if run.status in FAILURE_RUNS: pass
if run.kind == "cron": pass
if run.status is None: pass
if status_line == "x": pass
if item.status in ("missed", NEEDS_REVIEW): pass
"""
    lines = [node.lineno for node in literal_comparisons(ast.parse(source))]
    assert lines == [2, 3, 4, 5, 6, 12]
