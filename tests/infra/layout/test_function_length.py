"""No function in the runtime or in the tools over 50 lines, counted from its `def` to its last line (a nested
function counts in its parent too): a longer one is split at the steps it already has, so each step has a name a
reader can find."""

from __future__ import annotations

import ast
import textwrap

from support.layer import ROOT, RUNTIME

LIMIT = 50
TOOLS = ROOT / "tools" / "rebalancer_tools"


def too_long(source: str, where: str) -> list[str]:
    """`where::name (n lines)` for every function of source longer than LIMIT; methods are `Class.name`."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > LIMIT:
                    found.append(f"{where}::{prefix}{child.name} ({lines} lines)")
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def function(name: str, lines: int, indent: str = "") -> str:
    """The source of a function of exactly `lines` lines."""
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return textwrap.indent(f"def {name}():\n{body}", indent)


def test_the_count_runs_from_def_to_the_last_line_and_finds_methods_and_nested_functions() -> None:
    source = (function("fits", LIMIT) + function("over", LIMIT + 1)
              + "class C:\n    @property\n" + function("over", LIMIT + 1, "    ")
              + "def outer():\n" + function("inner", LIMIT + 1, "    "))
    assert too_long(source, "m.py") == ["m.py::over (51 lines)", "m.py::C.over (51 lines)",
                                        "m.py::outer (52 lines)", "m.py::outer.inner (51 lines)"]


def test_no_runtime_function_is_over_the_limit() -> None:
    found = []
    for path in sorted(RUNTIME.rglob("*.py")):
        where = path.relative_to(RUNTIME).as_posix()
        found += too_long(path.read_text(), where)
    assert found == []


def test_no_tools_function_is_over_the_limit() -> None:
    found = []
    for path in sorted(TOOLS.rglob("*.py")):
        if "_assets" not in path.relative_to(TOOLS).parts:  # links to the checkout's handlers, not tools' code
            found += too_long(path.read_text(), path.relative_to(TOOLS).as_posix())
    assert found == []
