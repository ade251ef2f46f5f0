"""The runtime package's layers, read from its imports: each subpackage imports only the ones below it, so the
folder names tell a newcomer what may depend on what. Bottom to top: the error kinds; the instance-type catalog;
document parsing; the domain (snapshot, policy, pools, plan, budget model, names, ownership, samples); budgets
(metering and enforcement), then the engine (water-fill, rounding, stability, family caps), both pure, the engine's
stability rules applying budget enforcement as one of its holds; the forecast (Kueue's admission simulated forward
from what the controller sees); planning (snapshot + policy → plan); adapters
(AWS, Kubernetes, DynamoDB); the Lambda side (`app`). Every `__init__.py` is empty."""

from __future__ import annotations

import pytest
from support.import_graph import MODULES, import_graph

LAYERS = ("errors", "catalog", "parsing", "domain", "budgets", "engine", "forecast", "planning", "adapters", "app")
# Pairs that must not meet although the order allows it: budgets know nothing of allocation (the engine's
# stability seam applies spent budgets as a hold: rebalancer.engine.stability).
APART = {("budgets", "engine")}


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
             "rebalancer.budgets.metering": {"rebalancer.engine.allocation"},
             "rebalancer.app.observe": {"rebalancer.domain.sample", "rebalancer.adapters.aws"}}
    assert violations(graph) == [
        "rebalancer.budgets.metering (budgets) imports rebalancer.engine.allocation (engine)",
        "rebalancer.domain.plan (domain) imports rebalancer.planning.planner (planning)"]


def test_every_runtime_module_sits_in_a_layer() -> None:
    outside = [m for m in MODULES if m != "rebalancer" and layer_of(m) not in LAYERS]
    assert outside == []


def test_no_layer_imports_one_above_it() -> None:
    assert violations(import_graph()) == []


INITS = sorted(m for m, path in MODULES.items() if path.name == "__init__.py" and m != "rebalancer")


@pytest.mark.parametrize("module", INITS)
def test_subpackage_inits_are_empty(module: str) -> None:
    assert MODULES[module].read_text().strip() == "", f"{MODULES[module]} should be empty: code lives in modules"
