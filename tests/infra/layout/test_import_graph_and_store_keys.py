"""The runtime package's shape, read from its source: no import cycles between its modules (counting every import:
module level, inside functions and under TYPE_CHECKING, because each is a dependency someone has to untangle), and
DynamoDB's keys and table calls in the DynamoDB adapter package alone (a repository per item family over the table
module's key layout)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from support.import_graph import MODULES, ROOT, cycles, import_graph

TABLE_CALLS = {"put_item", "get_item", "update_item", "delete_item", "query", "scan", "batch_write_item",
               "transact_write_items", "put_new"}
DYNAMODB = "rebalancer.adapters.dynamodb"


def test_the_cycle_finder_finds_a_cycle_and_only_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert "rebalancer.app.approvals.decisions" in graph["rebalancer.app.approvals.http"]
    assert "rebalancer.domain.records" in graph["rebalancer.app.approvals.decisions"]
    assert "rebalancer.adapters.dynamodb.table" in graph["rebalancer.adapters.dynamodb.locks"]
    assert len(graph) == len(MODULES) > 20


def test_the_runtime_package_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", ["rebalancer.app.approvals.http", "rebalancer.app.approvals.decisions"])
def test_each_approval_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def _table_use(tree: ast.AST) -> list[str]:
    """What in this source reaches DynamoDB directly: the store's key names, `.table`, table API calls."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{DYNAMODB}."):
            found += [f"imports {a.name}" for a in node.names if a.name in ("KEY", "SORT", "TTL")]
        elif isinstance(node, ast.Attribute) and (node.attr == "table" or node.attr in TABLE_CALLS):
            found.append(f".{node.attr} (line {node.lineno})")
    return found


def test_the_table_use_finder_sees_a_key_built_outside_the_store() -> None:
    source = ("from rebalancer.adapters.dynamodb.table import KEY, SORT\n"
              "def claim(store, n):\n    return store.put_new({KEY: 'APPROVAL#1', SORT: n})\n")
    assert _table_use(ast.parse(source)) == ["imports KEY", "imports SORT", ".put_new (line 3)"]


def test_only_the_dynamodb_adapters_read_or_write_the_table() -> None:
    """Item keys (pk/sk/expires_at) are laid out in rebalancer.adapters.dynamodb alone; everything else asks a
    repository by name."""
    offenders = {name: use for name, path in MODULES.items() if not name.startswith(f"{DYNAMODB}.")
                 for use in [_table_use(ast.parse(path.read_text()))] if use}
    assert offenders == {}


def test_the_approval_handler_imports_neither_the_resolver_nor_jinja2_until_an_http_request() -> None:
    """RequestApproval (the state machine's call) pays for neither; the first HTTP request imports them."""
    handler = ROOT.parent.parent / "functions" / "approval"
    lazy = ("jinja2", "aws_lambda_powertools.event_handler", "rebalancer.app.approvals.http")
    code = (f"import sys; sys.path.insert(0, {str(handler)!r}); import app; "
            f"print(sorted(m for m in {lazy!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
