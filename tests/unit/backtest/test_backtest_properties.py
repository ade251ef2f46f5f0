"""Invariants of a replay on random histories: the quotas a policy leaves never exceed the healthy capacity, and
reusing the plan of a repeated state is exactly planning it again."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.domain.policy import Policy
from rebalancer.domain.sample import DemandSample, Nodes, PoolUse
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import prepare, replay

TEAMS = ("a", "b", "c")
P5 = syn.P5

state = st.tuples(st.integers(1, 4),  # healthy nodes (8 GPUs each); one may have failed
                  st.lists(st.tuples(st.integers(0, 24), st.integers(0, 16)), min_size=3, max_size=3),
                  st.integers(1, 3))  # how many samples it lasts (repeated states)


def history(states: list[tuple[int, list[tuple[int, int]], int]], quotas: list[int]) -> list[DemandSample]:
    out = []
    i = 0
    for healthy, demand, repeat in states:
        for _ in range(repeat):
            out.append(DemandSample(
                cluster="c", cluster_arn=syn.ARN, at=syn.START + timedelta(minutes=5 * i),
                nodes={P5: Nodes(healthy=healthy, unhealthy=4 - healthy)},
                teams={t: {P5: PoolUse(in_use=u, pending=p, quota=q)}
                       for t, (u, p), q in zip(TEAMS, demand, quotas, strict=True)}))
            i += 1
    return out


@properties(60)
@given(st.lists(state, min_size=1, max_size=12), st.lists(st.integers(0, 12), min_size=3, max_size=3),
       st.sampled_from([0, 10, 30]), st.integers(1, 3), st.integers(0, 8))
def test_quotas_fit_capacity_and_the_shortcut_is_exact(states: list[tuple[int, list[tuple[int, int]], int]],
                                                       quotas: list[int], cooldown: int, min_step: int,
                                                       guarantee: int) -> None:
    samples = history(states, quotas)
    policy = Policy.model_validate({
        "stability": {"cooldown_minutes": cooldown, "min_step": min_step},
        "teams": {"a": {"weight": 2, "guarantee": {P5: guarantee}}, "b": {}, "c": {"protected_in_use": True}}})
    prepared = prepare(samples)
    fast = replay("p", prepared, policy, samples[0])
    slow = replay("p", prepared, policy, samples[0], reuse=False)
    assert fast.quota == slow.quota
    assert {**fast.summary(), "planner_calls": 0} == {**slow.summary(), "planner_calls": 0}
    for k, s in enumerate(prepared):
        # A plan may leave quotas above a shrunken capacity only when the recorded start already did.
        if k > 0 and slow.runs_changed:
            total = sum(slow.quota[t][k] for t in TEAMS)
            assert total <= max(s.capacity[P5], sum(slow.quota[t][k - 1] for t in TEAMS))
