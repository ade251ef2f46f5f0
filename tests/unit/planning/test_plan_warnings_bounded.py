"""A plan's warnings are each said once, cut, and capped with a count, and the plan step's output (what the execution's
state carries) is bounded whatever the plan holds: hostile text in a snapshot once made the plan step's warnings
exceed Step Functions' 256 KB, and every Collect after it failed."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import policy, snapshot
from support.props import properties

from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan as plan_step
from rebalancer.domain.snapshot import Governance, Snapshot
from rebalancer.planning.planner import WARNING_MAX_BYTES, WARNINGS_MAX, make_plan
from rebalancer_tools.fakes.memory_store import MemoryStore

P5 = "ml.p5.48xlarge"
STATE_LIMIT = 256 * 1024


def with_problems(problems: list[str]) -> Snapshot:
    snap = snapshot({P5: 4}, quotas={"a": {P5: 16}, "b": {P5: 16}}, pending={"a": {P5: 32}})
    return snap.model_copy(update={"governance": Governance(problems=tuple(problems))})


def test_repeated_warnings_are_said_once() -> None:
    plan = make_plan(with_problems(["Kueue RBAC missing"] * 30), policy({"a": {}, "b": {}}), T0)
    assert plan.warnings.count("Kueue RBAC missing") == 1


def test_many_warnings_are_capped_with_a_count_of_the_rest() -> None:
    problems = [f"problem {i}" for i in range(500)]
    plan = make_plan(with_problems(problems), policy({"a": {}, "b": {}}), T0)
    assert len(plan.warnings) == WARNINGS_MAX
    assert plan.warnings[:WARNINGS_MAX - 1] == tuple(problems[:WARNINGS_MAX - 1])
    assert plan.warnings[-1] == f"… and {500 - WARNINGS_MAX + 1} more warnings"


def test_a_huge_warning_is_cut() -> None:
    plan = make_plan(with_problems(["x" * 300_000]), policy({"a": {}, "b": {}}), T0)
    [warning] = [w for w in plan.warnings if w.startswith("x")]
    assert len(warning.encode()) <= WARNING_MAX_BYTES
    assert warning.endswith("…")


@properties(40)
@given(problems=st.lists(st.text(min_size=1, max_size=5000) | st.sampled_from(["same", "x" * 100_000]),
                         max_size=300))
def test_the_plan_steps_output_is_bounded_whatever_the_plan_says(problems: list[str]) -> None:
    store = MemoryStore()
    run = state.RunRef(cluster_name="test", execution_name="test-20261130T120000", execution_arn="", source="cli")
    state.record_snapshot(store.artifacts, run, with_problems(problems))
    out = plan_step(run, store=store, load_policy=lambda _: policy({"a": {}, "b": {}}, mode="approve"), now=T0)
    assert state.PlanResult.model_validate(out).decision in ("approve", "no_change")
    size = len(json.dumps(out, ensure_ascii=False).encode())
    assert size <= state.MAX_STATE_LINES * (state.MAX_STATE_LINE_BYTES + 8) + 1024 < STATE_LIMIT // 2
    stored = store.artifacts.get(run.execution_name, "PLAN")
    assert len(stored["warnings"]) <= WARNINGS_MAX
