"""Every request the planner writes is within the ranges botocore's SageMaker model gives (checked as AWS checks
them, maximums included, by the emulator's validator): an autoscaler limit far beyond any cluster once became a quota
request above the API's maximum of 10,000,000. A cut is named in the plan's warnings."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import policy, quota, snapshot
from support.props import properties

from rebalancer.adapters.kubernetes.karpenter import NODES_MAX, ceiling
from rebalancer.domain.plan import Plan
from rebalancer.domain.quotas import AMOUNT_RANGE, BORROW_LIMIT_RANGE, FAIR_SHARE_WEIGHT_RANGE
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.planner import make_plan
from rebalancer_tools.emulator.shapes import validate_request
from rebalancer_tools.fakes.kube import node_pool
from rebalancer_tools.packaging.sdk_model import sagemaker_model

P5 = "ml.p5.48xlarge"
R7I = "ml.r7i.48xlarge"  # 192 vCPU, 1,536 GiB: 8 GiB a vCPU
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef123456"
AUTOSCALED = {"AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter", "Status": "InService"}}


def _range(shape_name: str, member: str) -> tuple[Any, Any]:
    shape = sagemaker_model().shape_for(shape_name).members[member]
    return shape.metadata.get("min"), shape.metadata.get("max")


@pytest.mark.parametrize(("shape", "member", "ours"), [
    ("ComputeQuotaResourceConfig", "Count", AMOUNT_RANGE),
    ("ComputeQuotaResourceConfig", "Accelerators", AMOUNT_RANGE),
    ("ComputeQuotaResourceConfig", "VCpu", AMOUNT_RANGE),
    ("ComputeQuotaResourceConfig", "MemoryInGiB", AMOUNT_RANGE),
    ("AcceleratorPartitionConfig", "Count", AMOUNT_RANGE),
    ("ResourceSharingConfig", "BorrowLimit", BORROW_LIMIT_RANGE),
    ("ComputeQuotaTarget", "FairShareWeight", FAIR_SHARE_WEIGHT_RANGE),
])
def test_the_ranges_are_the_models(shape: str, member: str, ours: tuple[int, int]) -> None:
    assert _range(shape, member) == ours


def cluster(nodes: dict[str, int], *, ceilings: dict[str, int], pending: dict[str, dict[str, float]],
            quotas: dict[str, dict[str, float]] | None = None) -> Snapshot:
    """An autoscaled cluster with names the API's patterns accept (quota ids of 12 characters, a cluster ARN)."""
    base = snapshot(nodes, pending=pending,
                    raw_quotas=[quota(team, res, ComputeQuotaId=f"{team:0>12}"[:12])
                                for team, res in (quotas or {}).items()])
    doc = base.model_dump(mode="json", exclude_none=True)
    doc["cluster"].update(AUTOSCALED, ClusterArn=ARN)
    doc["autoscaling_max_nodes"] = ceilings
    for q in doc["quotas"]:
        q["ClusterArn"] = ARN
    return Snapshot.model_validate(doc)


def assert_valid(plan: Plan) -> None:
    for r in plan.requests:
        validate_request(r.operation, r.parameters)  # raises what AWS would answer


def test_an_autoscaler_ceiling_beyond_any_cluster_plans_within_the_apis_maximum() -> None:
    snap = cluster({P5: 8}, ceilings={P5: NODES_MAX}, pending={"a": {P5: 1e12}}, quotas={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert_valid(plan)
    assert plan.allocations["a"][P5]["accelerators"] == AMOUNT_RANGE[1]
    assert f"{P5}: 80,000,000 reachable is more than a quota can hold (the API's maximum is 10,000,000); planned " \
           "within 10,000,000" in plan.warnings


def test_memory_derived_from_vcpus_is_cut_to_the_apis_maximum_and_said() -> None:
    """CPU-only types are written as VCpu and MemoryInGiB by the type's ratio: 10,000,000 vCPUs of r7i are 80,000,000
    GiB, beyond the API's range."""
    snap = cluster({R7I: 2}, ceilings={R7I: NODES_MAX}, pending={"a": {R7I: 1e9}}, quotas={"a": {}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert_valid(plan)
    [entry] = plan.requests[-1].parameters["ComputeQuotaConfig"]["ComputeQuotaResources"]
    assert (entry["VCpu"], entry["MemoryInGiB"]) == (10_000_000.0, 10_000_000.0)
    assert f"a: {R7I} MemoryInGiB of 80,000,000.0 is outside the API's range (0 to 10,000,000); written as " \
           "10,000,000.0" in plan.warnings


def test_an_absolute_borrow_limit_beyond_the_range_is_cut_and_said() -> None:
    snap = cluster({P5: 8}, ceilings={}, pending={"a": {P5: 8}}, quotas={"a": {P5: 8}})
    pol = policy({"a": {"sharing": {"strategy": "LendAndBorrow", "absolute_borrow_limits": {P5: 10**12}}}})
    plan = make_plan(snap, pol, T0)
    assert_valid(plan)
    assert f"a: absolute borrow limit of {P5} Accelerators of 1,000,000,000,000 is outside the API's range (0 to " \
           "10,000,000); written as 10,000,000" in plan.warnings


@pytest.mark.parametrize("limit", ["1e400", "Infinity", "NaN", "-8", "eight", "9999999999999999999999Ei", 1e308])
def test_a_nodepool_limit_of_any_value_bounds_nodes_within_the_range_or_not_at_all(limit: Any) -> None:
    got = ceiling(node_pool("gpu", [P5], {"nvidia.com/gpu": limit, "cpu": "1e500"}))
    assert 0 <= got.get(P5, 0) <= NODES_MAX


@properties(60)
@given(ceiling_nodes=st.integers(0, NODES_MAX) | st.sampled_from([NODES_MAX, 10**6]),
       demand=st.floats(0, 1e15) | st.sampled_from([1e15]),
       borrow=st.none() | st.integers(0, 10**15),
       cpu=st.booleans(), held=st.integers(0, 64))
def test_every_request_is_within_the_apis_ranges(ceiling_nodes: int, demand: float, borrow: int | None, cpu: bool,
                                                 held: int) -> None:
    t = R7I if cpu else P5
    pool = t
    snap = cluster({t: 2}, ceilings={t: ceiling_nodes}, pending={"a": {pool: demand}, "b": {pool: demand / 3}},
                   quotas={"a": {pool: held}})
    sharing = {"sharing": {"strategy": "LendAndBorrow", "absolute_borrow_limits": {t: borrow}}} if borrow else {}
    plan = make_plan(snap, policy({"a": sharing, "b": {}}), T0)
    assert_valid(plan)
