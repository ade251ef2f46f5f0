"""The planner: which requests, in which order, with which parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.clusters import T0, apply_request, policy, quota, quota_sum, snapshot, validate

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file
from rebalancer.planning.planner import make_plan

ROOT = Path(__file__).resolve().parents[3]

P5, G5, TRN = "ml.p5.48xlarge", "ml.g5.12xlarge", "ml.trn1.32xlarge"
MIG = f"{P5}:mig-1g.10gb"


def entries(params: dict[str, Any]) -> list[dict[str, Any]]:
    return list(params["ComputeQuotaConfig"]["ComputeQuotaResources"])


def test_decreases_come_before_increases_and_versions_chain() -> None:
    # b loses g5 and gains p5: two updates, the second on the version the first one produces.
    snap = snapshot({P5: 2, G5: 2}, quotas={"a": {P5: 16}, "b": {G5: 8}},
                    pending={"a": {G5: 8}, "b": {P5: 16}})
    plan = make_plan(snap, policy({"a": {}, "b": {}}), T0)
    validate(plan)
    deltas = [(r.team, r.parameters["TargetVersion"]) for r in plan.requests]
    assert deltas == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    s = snap
    for r in plan.requests:
        s = apply_request(s, r, T0)
        assert quota_sum(s, P5) <= 16
        assert quota_sum(s, G5) <= 8


def test_update_keeps_what_the_quota_already_had() -> None:
    raw = quota("a", [{"InstanceType": P5, "Count": 2},
                      {"InstanceType": TRN, "Accelerators": 16},
                      {"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 7}}],
                version=4, weight=42)
    raw["ComputeQuotaConfig"]["ResourceSharingConfig"] = {"Strategy": "Lend", "BorrowLimit": 10}
    raw["ComputeQuotaConfig"]["PreemptTeamTasks"] = "Never"
    snap = snapshot({P5: 4, TRN: 1}, raw_quotas=[raw], pending={"a": {P5: 24, TRN: 16}},
                    mig={P5: {"mig-1g.10gb": 7}}, in_use={"a": {MIG: 7}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    validate(plan)
    (req,) = plan.requests
    p = req.parameters
    assert p["ComputeQuotaId"] == "cq-a"
    assert p["TargetVersion"] == 4
    # Count 2 × 8 GPUs = 16 before; capacity 4 × 8 - 1 GPU carved into MIG = 31 (demand 24 → 24).
    assert plan.changes[0].before == 16
    assert plan.changes[0].after == 24
    assert entries(p) == [{"InstanceType": P5, "Accelerators": 24}, {"InstanceType": TRN, "Accelerators": 16},
                          {"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 7}}]
    assert p["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "Lend", "BorrowLimit": 10}
    assert p["ComputeQuotaConfig"]["PreemptTeamTasks"] == "Never"
    assert p["ComputeQuotaTarget"] == {"TeamName": "a", "FairShareWeight": 42}


def test_a_team_without_quota_gets_a_create_request() -> None:
    snap = snapshot({G5: 2}, pending={"new-team": {G5: 4}})
    plan = make_plan(snap, policy({"new-team": {"weight": 7}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert req.operation == "CreateComputeQuota"
    assert req.parameters["Name"] == "new-team-quota"
    assert req.parameters["ClusterArn"] == snap.cluster.ClusterArn
    assert req.parameters["ComputeQuotaTarget"] == {"TeamName": "new-team", "FairShareWeight": 7}
    assert req.parameters["ComputeQuotaConfig"]["ResourceSharingConfig"]["Strategy"] == "LendAndBorrow"
    assert req.parameters["ActivationState"] == "Enabled"
    assert entries(req.parameters) == [{"InstanceType": G5, "Accelerators": 4}]


def test_an_entry_that_drops_to_zero_is_removed() -> None:
    snap = snapshot({G5: 2, P5: 1}, quotas={"a": {G5: 8, P5: 8}}, pending={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert entries(plan.requests[0].parameters) == [{"InstanceType": P5, "Accelerators": 8}]


def test_teams_outside_the_policy_keep_their_quota_and_their_share_of_capacity() -> None:
    snap = snapshot({G5: 3}, quotas={"legacy": {G5: 4}}, pending={"a": {G5: 12}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert plan.allocations["a"][G5]["accelerators"] == 8
    assert all(r.team != "legacy" for r in plan.requests)
    assert any("legacy" in w for w in plan.warnings)


def test_mig_pool_is_allocated_in_partitions_and_carved_from_whole_gpus() -> None:
    snap = snapshot({P5: 1}, mig={P5: {"mig-1g.10gb": 14}}, pending={"a": {MIG: 10, P5: 8}, "b": {MIG: 10}})
    plan = make_plan(snap, policy({"a": {}, "b": {}}), T0)
    validate(plan)
    assert plan.allocations["a"][MIG] == {"partitions": 7}
    assert plan.allocations["b"][MIG] == {"partitions": 7}
    assert plan.allocations["a"][P5] == {"accelerators": 6}  # 8 GPUs minus 2 carved into 14 partitions


def test_approval_follows_the_mode_and_the_thresholds() -> None:
    snap = snapshot({P5: 4}, quotas={"a": {P5: 32}}, pending={"b": {P5: 32}}, in_use={"a": {P5: 16}})
    teams = {"a": {}, "b": {}}
    # b has no quota yet: creating one needs approval by default (approval.new_teams), so that rule is off here.
    auto = make_plan(snap, policy(teams, approval={"moved_accelerators": 100, "max_decrease_percent": 90,
                                                   "new_teams": False}), T0)
    assert not auto.requires_approval
    strict = make_plan(snap, policy(teams, approval={"moved_accelerators": 8, "max_decrease_percent": 50,
                                                     "new_teams": False}), T0)
    assert strict.requires_approval
    assert any("moves 16 accelerators" in r for r in strict.approval_reasons)
    assert not any("a loses" in r for r in strict.approval_reasons)  # 32 → 16 is 50 %, not above 50 %
    assert make_plan(snap, policy(teams, mode="approve"), T0).requires_approval
    dry = make_plan(snap, policy(teams, mode="dry-run", approval={"moved_accelerators": 0}), T0)
    assert dry.requests
    assert not dry.requires_approval
    assert not dry.applies


def test_no_change_means_no_request_and_no_approval() -> None:
    snap = snapshot({G5: 1}, quotas={"a": {G5: 4}}, pending={"a": {G5: 4}})
    plan = make_plan(snap, policy({"a": {}}, mode="approve"), T0)
    assert plan.is_empty
    assert not plan.requires_approval


def test_more_than_fifteen_entries_is_refused_with_a_warning() -> None:
    types = ["ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.4xlarge", "ml.g5.8xlarge", "ml.g5.12xlarge", "ml.g5.16xlarge",
             "ml.g5.24xlarge", "ml.g5.48xlarge", "ml.g6.xlarge", "ml.g6.2xlarge", "ml.g6.4xlarge", "ml.g6.8xlarge",
             "ml.g6.12xlarge", "ml.g6.16xlarge", "ml.g6.24xlarge", "ml.g6.48xlarge"]
    snap = snapshot(dict.fromkeys(types, 1), pending={"a": dict.fromkeys(types, 1)})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert plan.requests == ()
    assert plan.changes == ()
    assert any("at most 15" in w for w in plan.warnings)


def test_example_plan_validates_against_the_sdk() -> None:
    snap = load_model_file(Snapshot, ROOT / "examples/snapshot.json")
    pol = load_model_file(Policy, ROOT / "examples/policy.yaml")
    plan = make_plan(snap, pol, snap.taken_at)
    validate(plan)
    assert plan.changes
    assert any("1 node of ml.p5.48xlarge unhealthy" in c.reason for c in plan.changes)


def test_an_unknown_mig_profile_in_the_snapshot_is_invalid_input_naming_it() -> None:
    snap = snapshot({P5: 1}, mig={P5: {"mig-9g.99gb": 1}})
    with pytest.raises(InvalidInput, match=r"mig\.ml\.p5\.48xlarge\.mig-9g\.99gb.*mig-9g\.99gb"):
        make_plan(snap, policy({"a": {}}), T0)


def test_percent_guarantee_is_of_healthy_capacity_rounded_down() -> None:
    snap = snapshot({G5: (3, 1)}, pending={"b": {G5: 16}})
    plan = make_plan(snap, policy({"a": {"guarantee": {G5: "30%"}}, "b": {}}), T0)
    assert plan.allocations["a"][G5] == {"accelerators": 3}  # 30 % of 12 healthy = 3.6 → 3
    assert plan.allocations["b"][G5] == {"accelerators": 9}
