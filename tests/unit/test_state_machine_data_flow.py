"""The data flow statemachines/rebalance.asl.json shows is the one that exists. Each Task passes its step exactly what
the step's handler reads through its input model (the model named in functions/<step>/app.py), no field more and
none it requires less; each path it reads from the execution's state names a field a step's result holds (or the run,
or a caught error); and each result holds only what a later state reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from support import template as t
from support.events import load_event

from rebalancer.app.trigger.start import Starter
from rebalancer.app.workflow import state
from rebalancer_tools.fakes.memory_store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
ASL: dict[str, Any] = json.loads((ROOT / "statemachines" / "rebalance.asl.json").read_text())
STATES: dict[str, dict[str, Any]] = ASL["States"]
# Where a step's result goes in the execution's state, and what it is.
RESULTS: dict[str, type[BaseModel]] = {"plan": state.PlanResult, "apply": state.ApplyResult,
                                       "verify": state.VerifyResult}
ERROR = {"Error", "Cause"}  # what a Catch puts at its ResultPath
RUN = "run"  # the Begin state's


def function_of(task: dict[str, Any]) -> str:
    """The function folder a Task invokes: `${PlanFunctionArn}` (or the FunctionName of a lambda:invoke) → plan."""
    arn = task["Parameters"]["FunctionName"] if task["Resource"].startswith("arn:aws:states:::lambda") \
        else task["Resource"]
    logical = re.fullmatch(r"\$\{(\w+)Arn\}", arn)
    assert logical, arn
    return Path(t.template()["Resources"][logical.group(1)]["Properties"]["CodeUri"]).name


def input_of(task: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = task["Parameters"]
    return params["Payload"] if task["Resource"].startswith("arn:aws:states:::lambda") else params


def handler_model(function: str) -> type[BaseModel]:
    """The model the handler reads the state machine's input through: `state.parse(state.X, …)`, or
    `state.run_of(…)` (a RunInput)."""
    source = (ROOT / "functions" / function / "app.py").read_text()
    found = set(re.findall(r"state\.parse\(state\.(\w+)", source)) | ({"RunInput"} if "state.run_of(" in source
                                                                       else set())
    assert len(found) == 1, f"{function}: reads its input through {sorted(found)}"
    model: type[BaseModel] = getattr(state, found.pop())
    return model


def tasks() -> Iterator[tuple[str, dict[str, Any]]]:
    yield from ((name, s) for name, s in STATES.items() if s["Type"] == "Task")


def passed(params: dict[str, Any], model: type[BaseModel], where: str) -> list[str]:
    """What is wrong with `params` as `model`'s input: a field the model does not read, one it needs missing."""
    wrong = []
    fields = model.model_fields
    names = {k.removesuffix(".$"): v for k, v in params.items()}
    wrong += [f"{where}.{k}: not read by {model.__name__}" for k in names if k not in fields]
    wrong += [f"{where}.{k}: required by {model.__name__}, not passed" for k, f in fields.items()
              if f.is_required() and k not in names]
    for k, value in names.items():
        nested = fields[k].annotation if k in fields else None
        inner = next((a for a in getattr(nested, "__args__", (nested,)) if isinstance(a, type)
                      and issubclass(a, BaseModel)), None)
        if isinstance(value, dict) and inner is not None:
            wrong += passed(value, inner, f"{where}.{k}")
    return wrong


def paths(node: Any) -> Iterator[str]:
    """Every path into the execution's state a state reads ($$ is the context object, not the state)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (k.endswith(".$") or k.endswith("Path") or k == "Variable") and isinstance(v, str) \
                    and v.startswith("$.") and k != "ResultPath":
                yield v
            yield from paths(v)
    elif isinstance(node, list):
        for v in node:
            yield from paths(v)


class Sfn:
    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] = []

    def start_execution(self, **kw: Any) -> dict[str, Any]:
        self.inputs.append(json.loads(kw["input"]))
        return {}


def execution_input() -> dict[str, Any]:
    """What the trigger starts a run with."""
    sfn, now = Sfn(), datetime(2026, 11, 30, 12, tzinfo=UTC)
    event = load_event("hyperpod-node-health")
    starter = Starter(store=MemoryStore(now=lambda: now), sfn=sfn, managed=(event["detail"]["ClusterName"],),
                      state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:rebalancer-rebalance",
                      lock_ttl=timedelta(minutes=30), debounce=timedelta(minutes=5), clock=lambda: now)
    assert starter.handle(event).status == "started"
    [started] = sfn.inputs
    return started


def written() -> dict[str, set[str]]:
    """Each top-level key of the state a state writes (or the trigger starts the run with), with what it holds."""
    out: dict[str, set[str]] = {k: set(v) if isinstance(v, dict) else set() for k, v in execution_input().items()}
    out[RUN] = {k.removesuffix(".$") for k in STATES["Begin"]["Parameters"][RUN]}
    for s in STATES.values():
        for target, holds in [(s.get("ResultPath"), set(RESULTS.get(str(s.get("ResultPath"))[2:], BaseModel)
                                                        .model_fields) or set(s.get("Result", {})))] + \
                             [(c.get("ResultPath"), ERROR) for c in s.get("Catch", [])]:
            if target:
                out.setdefault(target.removeprefix("$."), set()).update(holds)
    return out


@pytest.mark.parametrize(("name", "task"), list(tasks()), ids=[n for n, _ in tasks()])
def test_a_task_passes_its_step_what_its_handler_reads(name: str, task: dict[str, Any]) -> None:
    function = function_of(task)
    assert passed(input_of(task), handler_model(function), name) == []


def test_each_path_read_from_the_state_names_what_a_step_or_a_catch_put_there() -> None:
    held = written()
    unknown = sorted({p for s in STATES.values() for p in paths(s)
                      if (parts := p[2:].split("."))[0] not in held
                      or (len(parts) > 1 and parts[1] not in held[parts[0]])})
    assert unknown == []


def test_each_step_result_holds_only_what_a_later_state_reads() -> None:
    read = {p[2:] for s in STATES.values() for p in paths(s)}
    for key, model in RESULTS.items():
        assert {f"{key}.{f}" for f in model.model_fields} <= read, key


def test_the_run_each_step_is_given_is_a_run_reference() -> None:
    assert set(STATES["Begin"]["Parameters"][RUN]) - {k + ".$" for k in state.RunRef.model_fields} == set()


def test_the_check_finds_a_field_no_step_reads_and_one_a_step_needs() -> None:
    plan = next(s for n, s in tasks() if n == "Plan")
    assert passed({**input_of(plan), "collect.$": "$.collect"}, state.PlanInput, "Plan") == [
        "Plan.collect: not read by PlanInput"]
    verify = next(s for n, s in tasks() if n == "Verify")
    params = {k: v for k, v in input_of(verify).items() if k != "attempt.$"}
    params["apply"] = {**params["apply"], "outcomes.$": "$.apply.outcomes"}
    assert passed(params, state.VerifyInput, "Verify") == ["Verify.attempt: required by VerifyInput, not passed",
                                                           "Verify.apply.outcomes: not read by VerifyApply"]
