"""The runtime package's layers, read from its imports: each subpackage imports only the ones below it, so the
folder names tell a newcomer what may depend on what. Bottom to top: the error kinds; the instance-type catalog;
document parsing; the domain (snapshot, policy, pools, plan, budget model, names, ownership, samples); budgets
(metering and enforcement) and the engine (water-fill, rounding, family caps), both pure; planning (snapshot + policy
→ plan); adapters (AWS, Kubernetes, DynamoDB); the Lambda side (`app`). Every `__init__.py` is empty."""

from __future__ import annotations

import pytest
from support.import_graph import MODULES, import_graph

LAYERS = ("errors", "catalog", "parsing", "domain", "budgets", "engine", "planning", "adapters", "app")
# Same-height pairs that must not meet either: the engine and budgets are independent pure cores.
APART = {("engine", "budgets"), ("budgets", "engine")}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a layer above its own (or from a layer it must stay apart from)."""
    found = []
    for module, deps in sorted(graph.items()):
        mine = layer_of(module)
        if mine not in LAYERS:
            continue
        for dep in sorted(deps):
            theirs = layer_of(dep)
            if theirs not in LAYERS:
                continue
            if LAYERS.index(theirs) > LAYERS.index(mine) or (mine, theirs) in APART:
                found.append(f"{module} ({mine}) imports {dep} ({theirs})")
    return found


def test_the_checker_flags_an_upward_import_and_passes_a_downward_one() -> None:
    graph = {"rebalancer.domain.plan": {"rebalancer.planning.planner"},
             "rebalancer.engine.allocation": {"rebalancer.budgets.metering"},
             "rebalancer.app.observe": {"rebalancer.domain.sample", "rebalancer.adapters.aws"}}
    assert violations(graph) == [
        "rebalancer.domain.plan (domain) imports rebalancer.planning.planner (planning)",
        "rebalancer.engine.allocation (engine) imports rebalancer.budgets.metering (budgets)"]


def test_every_runtime_module_sits_in_a_layer() -> None:
    outside = [m for m in MODULES if m != "rebalancer" and layer_of(m) not in LAYERS]
    assert outside == []


def test_no_layer_imports_one_above_it() -> None:
    assert violations(import_graph()) == []


INITS = sorted(m for m, path in MODULES.items() if path.name == "__init__.py" and m != "rebalancer")


@pytest.mark.parametrize("module", INITS)
def test_subpackage_inits_are_empty(module: str) -> None:
    assert MODULES[module].read_text().strip() == "", f"{MODULES[module]} should be empty: code lives in modules"
