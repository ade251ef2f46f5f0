"""The runtime package's shape, read from its source: no import cycles between its modules (counting every import:
module level, inside functions and under TYPE_CHECKING, because each is a dependency someone has to untangle), and
DynamoDB's keys and table calls in the store alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rebalancer

PACKAGE = Path(rebalancer.__file__).resolve().parent
ROOT = PACKAGE.parent
TABLE_CALLS = {"put_item", "get_item", "update_item", "delete_item", "query", "scan", "batch_write_item",
               "transact_write_items", "put_new"}
STORE = "rebalancer.app.store"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imported(name: str, tree: ast.AST) -> Iterator[str]:
    """The runtime modules `name` imports: `from a.b import c` is a.b.c when c is a module, else a.b."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    yield f"{base}.{a.name}"
                elif base in MODULES:
                    yield base


def import_graph() -> dict[str, set[str]]:
    return {name: set(_imported(name, ast.parse(path.read_text()))) - {name} for name, path in MODULES.items()}


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


def test_the_cycle_finder_finds_a_cycle_and_only_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert "rebalancer.app.approvals" in graph["rebalancer.app.approval_http"]
    assert "rebalancer.app.store" in graph["rebalancer.app.approvals"]
    assert len(graph) == len(MODULES) > 20


def test_the_runtime_package_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", ["rebalancer.app.approval_http", "rebalancer.app.approvals"])
def test_each_approval_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def _table_use(tree: ast.AST) -> list[str]:
    """What in this source reaches DynamoDB directly: the store's key names, `.table`, table API calls."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == STORE:
            found += [f"imports {a.name}" for a in node.names if a.name in ("KEY", "SORT", "TTL")]
        elif isinstance(node, ast.Attribute) and (node.attr == "table" or node.attr in TABLE_CALLS):
            found.append(f".{node.attr} (line {node.lineno})")
    return found


def test_the_table_use_finder_sees_a_key_built_outside_the_store() -> None:
    source = ("from rebalancer.app.store import KEY, SORT\n"
              "def claim(store, n):\n    return store.put_new({KEY: 'APPROVAL#1', SORT: n})\n")
    assert _table_use(ast.parse(source)) == ["imports KEY", "imports SORT", ".put_new (line 3)"]


def test_only_the_store_reads_or_writes_the_table() -> None:
    """Item keys (pk/sk/expires_at) are laid out in one module; everything else asks the store by name."""
    offenders = {name: use for name, path in MODULES.items() if name != STORE
                 for use in [_table_use(ast.parse(path.read_text()))] if use}
    assert offenders == {}


def test_the_approval_handler_imports_neither_the_resolver_nor_jinja2_until_an_http_request() -> None:
    """RequestApproval (the state machine's call) pays for neither; the first HTTP request imports them."""
    handler = ROOT.parent.parent / "functions" / "approval"
    lazy = ("jinja2", "aws_lambda_powertools.event_handler", "rebalancer.app.approval_http")
    code = (f"import sys; sys.path.insert(0, {str(handler)!r}); import app; "
            f"print(sorted(m for m in {lazy!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
