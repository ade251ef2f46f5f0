"""The runtime package (the Lambda layer) stands alone: it imports only the standard library, itself and what the
layer's requirements install, and never the tools package (CLI, emulator, simulator, demo)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.layer import FUNCTIONS, RUNTIME, closure, is_stdlib, top_level_modules


def imported_tops(path: Path) -> set[str]:
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


RUNTIME_FILES = sorted([*RUNTIME.rglob("*.py"), *FUNCTIONS.glob("*/app.py")])


@pytest.fixture(scope="module")
def allowed() -> set[str]:
    return top_level_modules(closure()) | {"rebalancer"}


@pytest.mark.parametrize("path", RUNTIME_FILES, ids=lambda p: str(p.relative_to(RUNTIME.parents[2])))
def test_runtime_imports_only_the_layer(path: Path, allowed: set[str]) -> None:
    outside = {top for top in imported_tops(path) if not is_stdlib(top) and top not in allowed}
    assert not outside, f"{path.name} imports {sorted(outside)}, which the layer does not ship"


def test_the_checker_sees_a_tools_import(tmp_path: Path, allowed: set[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import json\nfrom rebalancer_tools.cli import main\nimport moto.core\n")
    outside = {top for top in imported_tops(bad) if not is_stdlib(top) and top not in allowed}
    assert outside == {"rebalancer_tools", "moto"}


def test_the_layer_closure_leaves_out_the_dev_only_packages() -> None:
    names = set(closure())
    assert {"boto3", "botocore", "pydantic", "kubernetes", "aws-lambda-powertools"} <= names
    assert not names & {"moto", "click", "rich", "matplotlib", "hypothesis", "pytest"}
