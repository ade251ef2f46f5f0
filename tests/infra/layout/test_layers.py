"""The runtime package's layers, read from its imports: each subpackage imports only the ones below it, so the folder
names tell a newcomer what may depend on what. Bottom to top: spelling (the nearest name); the error kinds; the
instance-type catalog; document parsing; the domain (snapshot, policy, pools, plan, budget model, names, ownership,
samples); budgets (metering and enforcement), then the engine (water-fill, rounding, stability, family caps), both
pure, the engine's stability rules applying budget enforcement as one of its holds; the forecast (Kueue's admission
simulated forward from what the controller sees); planning (snapshot + policy → plan); adapters (AWS, Kubernetes,
DynamoDB); the Lambda side (`app`). Every `__init__.py` is empty. The tools package is layered the same way (its
order is stated below, with the CLI on top)."""

from __future__ import annotations

import pytest
from support.import_graph import MODULES, TOOLS_MODULES, import_graph

# `spelling` (the nearest name, for "did you mean") needs the standard library alone: every layer may use it.
LAYERS = ("spelling", "errors", "catalog", "parsing", "domain", "budgets", "engine", "forecast", "planning", "adapters",
          "app")
# Pairs that must not meet although the order allows it: budgets know nothing of allocation (the engine's
# stability seam applies spent budgets as a hold: rebalancer.engine.stability).
APART = {("budgets", "engine")}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def violations(graph: dict[str, set[str]], layers: tuple[str, ...] = LAYERS,
               apart: set[tuple[str, str]] = APART) -> list[str]:
    """Every import of a module from a layer above its own (or from a layer it must stay apart from)."""
    found = []
    for module, deps in sorted(graph.items()):
        mine = layer_of(module)
        if mine not in layers:
            continue
        for dep in sorted(deps):
            theirs = layer_of(dep)
            if theirs not in layers:
                continue
            if layers.index(theirs) > layers.index(mine) or (mine, theirs) in apart:
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


# The tools package (never deployed), bottom to top: what the project is built from and ships (template, assets,
# sample events, the SDK's model, the layer); output for people (tables, figures, a rendered plan, usage, drift, run
# ids); the fakes the local runs and the tests share (loopback, Kubernetes API, the table in memory, the clock); the
# HyperPod emulator; the template's IAM enforced on it; the local stack and the sandbox, which run the deployed
# application on those; the simulator and the backtest, which model a cluster in memory; the demo, which tells its
# story on the local stack; the CLI on top. At the root only the console script's entry and `python -m`'s.
TOOLS_LAYERS = ("packaging", "reports", "fakes", "emulator", "iam", "local", "simulator", "backtest", "demo", "cli")
TOOLS_ROOT = {"rebalancer_tools", "rebalancer_tools.__main__", "rebalancer_tools.entry"}
# The simulator and the backtest run nothing of AWS, emulated or faked: they stand apart from what does.
TOOLS_APART = {(model, aws) for model in ("simulator", "backtest") for aws in ("fakes", "emulator", "iam", "local")}


def test_the_tools_checker_flags_an_upward_import_and_a_model_reaching_the_emulator() -> None:
    graph = {"rebalancer_tools.local.stack": {"rebalancer_tools.demo.world", "rebalancer_tools.fakes.kube"},
             "rebalancer_tools.simulator.run": {"rebalancer_tools.emulator.control", "rebalancer_tools.reports.tables"},
             "rebalancer_tools.cli.plan_cmd": {"rebalancer_tools.reports.render"}}
    assert violations(graph, TOOLS_LAYERS, TOOLS_APART) == [
        "rebalancer_tools.local.stack (local) imports rebalancer_tools.demo.world (demo)",
        "rebalancer_tools.simulator.run (simulator) imports rebalancer_tools.emulator.control (emulator)"]


def test_every_tools_module_sits_in_a_layer_and_the_root_holds_only_the_entry_points() -> None:
    outside = [m for m in TOOLS_MODULES if m not in TOOLS_ROOT and layer_of(m) not in TOOLS_LAYERS]
    assert outside == []


def test_no_tools_layer_imports_one_above_it() -> None:
    assert violations(import_graph(TOOLS_MODULES), TOOLS_LAYERS, TOOLS_APART) == []
