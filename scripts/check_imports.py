"""Fail on any import circle between two modules of trident_local or trident_kernels.

    .venv/bin/python scripts/check_imports.py

import-linter's contracts (`lint-imports --no-cache`, pyproject.toml) keep the layers and forbid
circles between sibling packages; this check works module by module, so it also sees a circle
inside one package, or between a package's ``__init__`` and one of its modules. Every import
counts: at the top of a module, inside a function, and under ``if TYPE_CHECKING``. Exit status
1 and one line per circle (each import with its line number) when there is any, else 0.
"""

from __future__ import annotations

import sys
from collections import deque

import grimp

PACKAGES = ("trident_local", "trident_kernels")


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that reach each other through imports (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def shortest_circle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """A shortest circle through the group's first module, staying inside the group: [a, b, ..., a]."""
    start, members = group[0], set(group)
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.find_modules_directly_imported_by(node)):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if child in members and child not in parent:
                parent[child] = node
                queue.append(child)
    raise AssertionError(f"no circle through {start}")


def describe(graph: grimp.ImportGraph, circle: list[str]) -> str:
    steps = []
    for importer, imported in zip(circle, circle[1:], strict=False):
        lines = sorted({d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)})
        steps.append(f"{importer} (l.{', l.'.join(map(str, lines))})")
    return " -> ".join([*steps, circle[-1]])


def main() -> int:
    graph = grimp.build_graph(*PACKAGES)
    groups = strongly_connected(graph)
    for group in groups:
        circle = shortest_circle(graph, group)
        print(f"import circle: {describe(graph, circle)}")
        if len(group) > len(circle) - 1:
            print(f"  {len(group)} modules reach each other in all: {', '.join(group)}")
    if groups:
        return 1
    print(f"no import circles among {len(graph.modules)} modules of {', '.join(PACKAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
