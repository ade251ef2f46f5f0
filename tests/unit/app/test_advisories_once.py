"""A prerequisite's warning (an advisory: update the add-on before Kueue 0.20) is announced in one plan, not in
every plan, email, Slack message and page; a failed prerequisite stays in every plan."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, snapshot
from support.props import properties

from rebalancer.app.workflow.run_plan import announce_advisories_once, make_run_plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Governance, Snapshot
from rebalancer_tools.fakes.memory_store import MemoryStore

G5 = "ml.g5.12xlarge"
POLICY = Policy.model_validate({"teams": {"a": {}, "b": {}}})
ADVICE = "WARN Kueue RBAC: clusterqueues and workloads readable only as kueue.x-k8s.io/v1beta1 — fix: update"
PROBLEM = "FAIL add-on amazon-sagemaker-hyperpod-taskgovernance: not installed — fix: install it"


def governed(advisories: tuple[str, ...], problems: tuple[str, ...] = (PROBLEM,)) -> Snapshot:
    base = snapshot({G5: 2}, quotas={"a": {G5: 8}}, pending={"b": {G5: 8}})
    return base.model_copy(update={"governance": Governance(problems=problems, advisories=advisories)})


def run(store: MemoryStore, snap: Snapshot, execution: str = "run-1") -> tuple[str, ...]:
    planned = make_run_plan(snap, POLICY, T0, store=store)
    return announce_advisories_once(planned, snap, store.meter, execution).plan.warnings


def test_an_advisory_is_in_the_first_plan_only_and_a_problem_in_every_one() -> None:
    store = MemoryStore()
    first, second, third = (run(store, governed((ADVICE,)), f"run-{i}") for i in range(3))
    assert first.count(ADVICE) == 1
    assert PROBLEM in first
    assert ADVICE not in second
    assert ADVICE not in third
    assert PROBLEM in second
    assert PROBLEM in third
    # The pure plan still says it: `rebalancer plan --snapshot` on that snapshot shows it, once.
    assert make_run_plan(governed((ADVICE,)), POLICY, T0, store=MemoryStore()).plan.warnings.count(ADVICE) == 1


@properties(30)
@given(st.lists(st.sampled_from(["WARN a: x", "WARN b: y", "WARN c: z"]), min_size=1, max_size=6))
def test_each_advisory_is_announced_exactly_once_over_any_sequence_of_runs(seen: list[str]) -> None:
    """Whatever each run finds, every distinct advisory appears in exactly one plan: the first that found it."""
    store = MemoryStore()
    shown: list[str] = []
    for i, advisory in enumerate(seen):
        shown += [w for w in run(store, governed((advisory,), problems=()), f"run-{i}") if w.startswith("WARN")]
    assert sorted(shown) == sorted(set(seen))


def test_a_retried_plan_step_keeps_the_advisories_its_first_attempt_claimed() -> None:
    store = MemoryStore()
    first = run(store, governed((ADVICE,)), "run-1")
    assert run(store, governed((ADVICE,)), "run-1") == first  # the same run again: its claim is its own
    assert ADVICE not in run(store, governed((ADVICE,)), "run-2")
