"""The simulator applies everything a plan writes to a compute quota, not only its accelerators: FairShareWeight,
the lending strategy, BorrowLimit and AbsoluteBorrowLimits, PreemptTeamTasks, each read into the simulated Kueue's
ClusterQueue as the forecast reads a quota (rebalancer.planning.forecast_cluster.queue_of)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rebalancer.domain.policy import Policy
from rebalancer.forecast.kueue import borrowing_room
from rebalancer.forecast.model import Queue
from rebalancer.planning.forecast_cluster import queue_of
from rebalancer_tools.simulator.controller import PlannerController
from rebalancer_tools.simulator.engine import ControllerView
from rebalancer_tools.simulator.run import Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5, TRN1 = "ml.p5.48xlarge", "ml.trn1.32xlarge"
TEAMS = [TeamSpec("a", 1, 8), TeamSpec("b", 1, 8)]


def _policy(a: dict[str, Any]) -> Policy:
    """Each team keeps its hand-set 8 GPUs whatever it runs (a guarantee of all of it): only a's settings move."""
    return Policy.model_validate({"teams": {"a": {"guarantee": {P5: 8}, **a}, "b": {"guarantee": {P5: 8}}},
                                  "stability": {"cooldown_minutes": 0}})


def _b_waits(a: dict[str, Any]) -> float:
    """b runs two 8-GPU jobs on a 16-GPU cluster while a is idle, after the controller's first plan is written."""
    jobs = [TraceJob("b1", "b", 1000, 36000, 8), TraceJob("b2", "b", 1000, 36000, 8)]
    sc = Scenario(jobs=jobs, teams=TEAMS, nodes=2, borrow_limit_percent=100, policy=_policy(a))
    return run_strategy(sc, "rebalancer").teams["b"].wait_p95_s


def test_a_team_whose_quota_is_written_dontlend_lends_nothing() -> None:
    assert _b_waits({}) == 0  # a lends its idle 8 GPUs: b runs both jobs at once
    assert _b_waits({"sharing": {"strategy": "DontLend"}}) > 30000  # b's second job waits for its first


def _view(queues: dict[str, dict[str, Queue]] | None = None) -> ControllerView:
    return ControllerView(now_s=0, healthy_nodes={P5: 2}, failed_nodes={P5: 0}, quotas={"a": {P5: 8}, "b": {P5: 8}},
                          quota_versions={"a": 1, "b": 1}, quota_modified_s={"a": 0, "b": 0},
                          in_use={"a": {P5: 0}, "b": {P5: 0}}, pending={"a": {P5: 0}, "b": {P5: 0}},
                          queues=queues or {})


def test_the_decision_carries_the_queue_each_written_quota_configures() -> None:
    controller = PlannerController(_policy({"fair_share_weight": 7, "preempt_team_tasks": "Never", "sharing": {
        "strategy": "LendAndBorrow", "borrow_limit": 200, "absolute_borrow_limits": {P5: 3}}}), TEAMS, P5, 2)
    decision = controller(_view())
    assert decision is not None
    assert decision.quotas == {}  # no amount moves: the settings alone are written
    assert set(decision.queues) == {"a"}  # b's quota is written as it was read
    written = decision.queues["a"][P5]
    assert (written.weight, written.lend, written.borrow, written.borrow_limit, written.preempt_within) == \
        (7.0, True, True, 3.0, False)


def test_once_written_the_settings_are_read_back_and_nothing_is_written_again() -> None:
    controller = PlannerController(_policy({"sharing": {"strategy": "Lend"}}), TEAMS, P5, 2)
    decision = controller(_view())
    assert decision is not None
    queues = {"a": decision.queues["a"], "b": {P5: Queue("b", 8, borrow_limit_percent=50)}}
    assert controller(_view(queues)) is None


def _queue(nominal: float, lend: bool, borrow: bool, percent: int, absolute: int | None, weight: int,
           preempt: bool) -> Queue:
    """A ClusterQueue as a quota can configure it: a borrowing limit in accelerators where one is given for its
    type, else the quota's one BorrowLimit percent; none without borrowing."""
    return Queue("t", nominal, float(weight), lend or borrow, borrow,
                 float(percent) if borrow and absolute is None else None,
                 float(absolute) if borrow and absolute is not None else None, preempt)


@given(st.booleans(), st.booleans(), st.integers(1, 500), st.none() | st.integers(0, 64),
       st.none() | st.integers(0, 64), st.integers(0, 100), st.booleans())
def test_the_quota_made_from_a_teams_queues_reads_back_as_those_queues(
        lend: bool, borrow: bool, percent: int, p5_limit: int | None, trn1_limit: int | None, weight: int,
        preempt: bool) -> None:
    queues = {P5: _queue(8, lend, borrow, percent, p5_limit, weight, preempt),
              TRN1: _queue(16, lend, borrow, percent, trn1_limit, weight, preempt)}
    controller = PlannerController(Policy.model_validate({"teams": {"t": {}}}), [TeamSpec("t", 1, 8)],
                                   {P5: 1, TRN1: 1})
    quota = controller.quota("t", (8, 16), 1, 0.0, queues)
    assert {it: _effect(queue_of(quota, "t", it)) for it in queues} == {it: _effect(q) for it, q in queues.items()}


def _effect(q: Queue) -> tuple[object, ...]:
    """What Kueue does with a queue: its nominal quota, weight, lending, how far it may borrow, preemption."""
    return (q.nominal, q.weight, q.lend, borrowing_room(q.nominal, q.borrow, q.borrow_limit_percent, q.borrow_limit),
            q.preempt_within)
