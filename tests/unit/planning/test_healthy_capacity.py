"""Healthy capacity at the write (rebalancer.domain.healthy): what counts, what a quota holds per instance type, and
the guard every quota write passes: no write raises a type above its limit unless the quotas held as much."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import quota
from support.props import properties

from rebalancer.domain.healthy import Guard, healthy_capacity, limits, load
from rebalancer.domain.quotas import ComputeQuota

P5, C5 = "ml.p5.48xlarge", "ml.c5.4xlarge"


def q(team: str, resources: dict[str, float] | list[dict[str, Any]], **extra: Any) -> ComputeQuota:
    return ComputeQuota.model_validate(quota(team, resources, **extra))


def test_running_and_for_now_nodes_count_and_failed_ones_do_not() -> None:
    nodes = [(P5, "Running"), (P5, "DeepHealthCheckInProgress"), (P5, "Failure"), (P5, "Pending"),
             (C5, "SystemUpdating"), ("ml.unknown.type", "Running")]
    assert healthy_capacity(nodes) == {P5: 16.0, C5: 16.0}


def test_a_quota_holds_counts_as_instances_and_mig_partitions_as_their_share_of_a_gpu() -> None:
    mixed = q("a", [{"InstanceType": P5, "Count": 1},
                    {"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 14}},
                    {"InstanceType": C5, "VCpu": 6.5}, {"InstanceType": "ml.unknown.type", "Count": 3}])
    assert load(mixed) == {P5: 10.0, C5: 6.5}  # 8 GPUs + 14 partitions of 7 a GPU; an unknown type is left out
    assert load(q("b", {P5: 8}, ActivationState="Disabled")) == {}
    assert load(None) == {}


def test_the_autoscaler_s_ceiling_raises_a_limit_and_never_lowers_one() -> None:
    assert limits({P5: 16.0, C5: 32.0}, {P5: 40.0, C5: 16.0}) == {P5: 40.0, C5: 32.0}


def test_a_raise_above_the_limit_is_refused_a_raise_that_fits_or_a_decrease_is_not() -> None:
    a, b = q("a", {P5: 10}), q("b", {P5: 6})
    guard = Guard.of([a, b], {P5: 16.0})  # the pool holds exactly its capacity
    assert guard.refusal(a.ComputeQuotaId, q("a", {P5: 11})) == \
        f"{P5}: the enabled quotas would hold 17, the cluster has 16 healthy"
    assert guard.refusal(None, q("c", {P5: 1})) is not None  # a new quota takes room too
    assert guard.refusal(a.ComputeQuotaId, q("a", {P5: 8})) is None
    guard.wrote(a.ComputeQuotaId, q("a", {P5: 8}))
    assert guard.refusal(b.ComputeQuotaId, q("b", {P5: 8})) is None  # the room a's decrease left
    assert guard.refusal(None, q("c", {C5: 1})) == f"{C5}: the enabled quotas would hold 1, the cluster has 0 healthy"


def test_a_pool_a_node_left_may_stay_or_shrink_but_not_grow() -> None:
    a, b = q("a", {P5: 12}), q("b", {P5: 12})
    guard = Guard.of([a, b], {P5: 16.0})  # 24 held, 16 healthy: a node failed
    assert guard.refusal(a.ComputeQuotaId, q("a", {P5: 6})) is None
    guard.wrote(a.ComputeQuotaId, q("a", {P5: 6}))
    assert guard.refusal(b.ComputeQuotaId, q("b", {P5: 14})) == \
        f"{P5}: the enabled quotas would hold 20, the cluster has 16 healthy (they hold 18 now)"
    assert guard.refusal(a.ComputeQuotaId, q("a", {P5: 6}, ActivationState="Disabled")) is None
    assert guard.refusal(b.ComputeQuotaId, q("b", {P5: 10})) is None  # 18 → 16: lower, and at the limit


@st.composite
def writes(draw: st.DrawFn) -> tuple[list[ComputeQuota], dict[str, float], list[ComputeQuota]]:
    teams = ["a", "b", "c", "d"]
    start = [q(t, {P5: draw(st.integers(0, 24)), C5: draw(st.integers(0, 64))}) for t in teams
             if draw(st.booleans())]
    limit = {P5: float(draw(st.sampled_from([0, 8, 16, 24, 32]))), C5: float(draw(st.sampled_from([0, 16, 48])))}
    later = [q(draw(st.sampled_from(teams)), {P5: draw(st.integers(0, 24)), C5: draw(st.integers(0, 64))},
               ActivationState=draw(st.sampled_from(["Enabled", "Disabled"])))
             for _ in range(draw(st.integers(1, 12)))]
    return start, limit, later


@given(writes())
@properties(300)
def test_whatever_is_written_through_the_guard_no_type_ends_above_its_limit_or_what_it_held(
        case: tuple[list[ComputeQuota], dict[str, float], list[ComputeQuota]]) -> None:
    start, limit, later = case
    guard = Guard.of(start, limit)
    held = {qq.ComputeQuotaId: qq for qq in start}
    bound = {t: max(limit[t], sum(load(x).get(t, 0.0) for x in start)) for t in limit}
    for w in later:
        if guard.refusal(w.ComputeQuotaId if w.ComputeQuotaId in held else None, w) is None:
            guard.wrote(w.ComputeQuotaId, w)
            held[w.ComputeQuotaId] = w
        for t in limit:  # recounted from the quotas, not from the guard's running sums
            assert sum(load(x).get(t, 0.0) for x in held.values()) <= bound[t] + 1e-6
