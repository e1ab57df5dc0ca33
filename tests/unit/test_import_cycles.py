"""No import cycle inside a package of goalsui, except the ones listed here (a ratchet).

The graph is grimp's (import-linter brings it): every ``import`` statement of a module,
those inside functions included. A cycle is a strongly connected component of one
package's modules (the package's ``__init__`` and its subpackages included), so a
component of three modules is one entry, however many loops it holds.

Two graphs are checked:

- **imports that run** (``exclude_type_checking_imports=True``): no cycle at all;
- **with the annotations** (imports under ``if TYPE_CHECKING:`` too): only the cycles
  listed in :data:`CYCLES_THROUGH_ANNOTATIONS`, which issue 30 means to remove (a
  one-way scheduler pipeline, aggregates without a facade that sits under them).

A new cycle fails; so does a listed one that is gone or has changed, so that the list
only shrinks: delete the entry (or write the component as it now is, if it shrank).
"""

from __future__ import annotations

from collections.abc import Iterator

import grimp
import pytest

PACKAGES = (
    "domain",
    "kb",
    "store",
    "scheduler",
    "runners",
    "hooks",
    "service",
    "mcp",
    "tui",
    "cli",
    "bench",
    "ops",
)

#: the package's own ``__init__`` module
INIT = "__init__"

#: per package, the cycles that exist only through ``if TYPE_CHECKING:`` imports
CYCLES_THROUGH_ANNOTATIONS: dict[str, list[frozenset[str]]] = {}


@pytest.fixture(scope="module")
def graphs() -> dict[bool, grimp.ImportGraph]:
    """The import graph of goalsui, keyed by "annotations included"."""
    return {
        with_annotations: grimp.build_graph(
            "goalsui", exclude_type_checking_imports=not with_annotations, cache_dir=None
        )
        for with_annotations in (False, True)
    }


def short(package: str, module: str) -> str:
    root = f"goalsui.{package}"
    return INIT if module == root else module.removeprefix(root + ".")


def components(graph: grimp.ImportGraph, package: str) -> list[frozenset[str]]:
    """The strongly connected components (of two modules or more) of ``package``."""
    root = f"goalsui.{package}"
    modules = {root} | graph.find_descendants(root)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in modules}
    # Tarjan's algorithm, iterative
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(modules):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(edges[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(short(package, m) for m in component))
    return found


def explain(graph: grimp.ImportGraph, package: str, component: frozenset[str]) -> str:
    """The imports between the members of ``component``, with their lines."""

    def full(name: str) -> str:
        return f"goalsui.{package}" if name == INIT else f"goalsui.{package}.{name}"

    lines = []
    for a in sorted(component):
        for b in sorted(component):
            if a != b and graph.direct_import_exists(importer=full(a), imported=full(b)):
                for detail in graph.get_import_details(importer=full(a), imported=full(b)):
                    lines.append(f"    {a} -> {b} (line {detail['line_number']})")
    return "\n".join(lines)


def compare(
    graph: grimp.ImportGraph,
    package: str,
    found: list[frozenset[str]],
    allowed: list[frozenset[str]],
) -> list[str]:
    problems = []
    for component in found:
        if component not in allowed:
            problems.append(
                f"a new import cycle in goalsui.{package}: {sorted(component)}\n"
                + explain(graph, package, component)
            )
    for component in allowed:
        if component not in found:
            problems.append(
                f"the listed cycle {sorted(component)} of goalsui.{package} is gone or has "
                "changed: delete it from CYCLES_THROUGH_ANNOTATIONS (or write what is left)"
            )
    return problems


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_among_the_imports_that_run(
    graphs: dict[bool, grimp.ImportGraph], package: str
) -> None:
    graph = graphs[False]
    problems = compare(graph, package, components(graph, package), [])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", PACKAGES)
def test_cycles_through_annotations_only_shrink(
    graphs: dict[bool, grimp.ImportGraph], package: str
) -> None:
    graph = graphs[True]
    allowed = CYCLES_THROUGH_ANNOTATIONS.get(package, [])
    problems = compare(graph, package, components(graph, package), allowed)
    assert not problems, "\n".join(problems)


def test_the_listed_packages_are_all_of_goalsui(graphs: dict[bool, grimp.ImportGraph]) -> None:
    packages = {
        m.split(".")[1]
        for m in graphs[False].modules
        if m.count(".") >= 2 and m.startswith("goalsui.")
    }
    assert packages == set(PACKAGES), "add a new package of goalsui to PACKAGES"
    assert set(CYCLES_THROUGH_ANNOTATIONS) <= set(PACKAGES)


def test_a_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    for name in ("goalsui", "goalsui.x", "goalsui.x.a", "goalsui.x.b", "goalsui.x.c"):
        graph.add_module(name)
    graph.add_import(importer="goalsui.x.a", imported="goalsui.x.b")
    graph.add_import(importer="goalsui.x.b", imported="goalsui.x.c")
    graph.add_import(importer="goalsui.x.c", imported="goalsui.x")
    assert components(graph, "x") == []
    graph.add_import(importer="goalsui.x.c", imported="goalsui.x.b")
    assert components(graph, "x") == [frozenset({"b", "c"})]
    graph.add_import(importer="goalsui.x", imported="goalsui.x.a")
    assert components(graph, "x") == [frozenset({INIT, "a", "b", "c"})]
