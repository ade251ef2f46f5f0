"""Every module a docstring names exists, and so does the class, function or constant it names in it: a docstring that
sends a reader to `app.steps` when the steps live in `app.workflow.steps` is a wrong map. Checked for the runtime, the
tools and the handlers: dotted names from `rebalancer.` or `rebalancer_tools.`, `app.` (short for `rebalancer.app.`),
and names that start with a module the file imports (`run_plan.make_run_plan`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {"rebalancer": ROOT / "layers" / "core" / "rebalancer",
            "rebalancer_tools": ROOT / "tools" / "rebalancer_tools"}
SOURCES = sorted([*PACKAGES["rebalancer"].rglob("*.py"), *PACKAGES["rebalancer_tools"].rglob("*.py"),
                  *(ROOT / "functions").glob("*/app.py")])
# A dotted name not inside a path (`functions/plan/app.py`) and not a file name (`app.py`).
DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-]|\.\w|\()")
FILE_NAME = re.compile(r"\.(py|md|json|ya?ml|toml|txt|csv|html)$")


def module_file(dotted: str) -> Path | None:
    top, *rest = dotted.split(".")
    if top not in PACKAGES:
        return None
    base = PACKAGES[top].joinpath(*rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defined(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module or class body defines, each with its statement."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
        elif isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING blocks, optional imports
            names.update(defined([*node.body, *getattr(node, "orelse", [])]))
    return names


def resolves(dotted: str) -> bool:
    """`dotted` names a module, or a module and a name defined in it (and, in a class, a name in its body)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is None:
            continue
        body = ast.parse(path.read_text()).body
        for name in parts[cut:]:
            found = defined(body).get(name)
            if found is None:
                return False
            if not isinstance(found, ast.ClassDef):
                return True  # an attribute of a function's result or of a constant: not the map's business
            body = found.body
        return True
    return False


def imported_modules(tree: ast.Module, path: Path) -> dict[str, str]:
    """alias → dotted module, for the project's modules the file imports (anywhere in it)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if module_file(full) is not None:
                    out[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES and a.asname:
                    out[a.asname] = a.name
    return out


def docstrings(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def named_in(path: Path) -> list[tuple[str, str]]:
    """(as written, as resolved) for every dotted name of the project in the file's docstrings."""
    tree = ast.parse(path.read_text())
    aliases = imported_modules(tree, path)
    out = []
    for text in docstrings(tree):
        for written in DOTTED.findall(text.replace("\n", " ")):
            if FILE_NAME.search(written):
                continue
            first, _, rest = written.partition(".")
            if first in PACKAGES:
                out.append((written, written))
            elif first == "app":
                out.append((written, f"rebalancer.{written}"))
            elif first in aliases:
                out.append((written, f"{aliases[first]}.{rest}"))
    return out


def test_the_check_finds_names_that_do_not_exist_and_accepts_ones_that_do() -> None:
    assert resolves("rebalancer.app.workflow.runs")
    assert resolves("rebalancer.app.workflow.runs.apply_run")
    assert resolves("rebalancer.app.workflow.state.RunRef.execution_name")
    assert not resolves("rebalancer.app.steps")
    assert not resolves("rebalancer.app.run_plan")
    assert not resolves("rebalancer.app.workflow.runs.apply_plan")
    assert not resolves("rebalancer.app.workflow.state.RunRef.execution")
    assert [w for w in DOTTED.findall("see `app.workflow.audit`, functions/plan/app.py and app.py.")
            if not FILE_NAME.search(w)] == ["app.workflow.audit"]


def test_every_module_a_docstring_names_exists() -> None:
    named = {path: named_in(path) for path in SOURCES}
    assert sum(map(len, named.values())) > 100  # the check reads the docstrings it is meant to
    wrong = [f"{path.relative_to(ROOT)}: {written}" for path, names in named.items() for written, dotted in names
             if not resolves(dotted)]
    assert wrong == []
