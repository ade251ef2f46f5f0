"""The import graphs of the runtime package and of the tools package, read from their source (every import counts:
module level, inside functions and under TYPE_CHECKING, since each is a dependency someone has to untangle); the
layout tests read them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import rebalancer
import rebalancer_tools

PACKAGE = Path(rebalancer.__file__).resolve().parent
ROOT = PACKAGE.parent
TOOLS_PACKAGE = Path(rebalancer_tools.__file__).resolve().parent


def modules_of(package: Path) -> dict[str, Path]:
    """Every module of the package, by dotted name (a subpackage by its `__init__.py`)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = modules_of(PACKAGE)
TOOLS_MODULES = {name: path for name, path in modules_of(TOOLS_PACKAGE).items() if "._assets." not in name}


def _imported(name: str, tree: ast.AST, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules `name` imports: `from a.b import c` is a.b.c when c is a module, else a.b."""
    package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    yield f"{base}.{a.name}"
                elif base in modules:
                    yield base


def import_graph(modules: dict[str, Path] = MODULES) -> dict[str, set[str]]:
    """Each module of `modules` (default: the runtime's) → the modules of the same set it imports."""
    return {name: set(_imported(name, ast.parse(path.read_text()), modules)) - {name}
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)
