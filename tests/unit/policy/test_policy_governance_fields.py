"""Policy validation of the task-governance fields: families, vCPU / memory, sharing, cluster policy, remove."""

from __future__ import annotations

import pytest

from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import parse_document
from rebalancer.parsing.validation import load_model

FULL = """
teams:
  research:
    weight: 3
    guarantee: {ml.p5: 16}
    cap: {ml.p5: 40}
    vcpu: {ml.trn1.32xlarge: 64}
    memory_gib: {ml.trn1.32xlarge: "25%"}
    sharing: {strategy: LendAndBorrow, borrow_limit: 80, absolute_borrow_limits: {ml.p5.48xlarge: 8}}
    fair_share_weight: 30
    preempt_team_tasks: Never
  old-team: {remove: true}
cluster:
  priority_classes: [{name: inference, weight: 90}, {name: training, weight: 50}]
  fair_share: Enabled
  idle_resource_sharing: Disabled
"""


def test_full_policy_loads_round_trips_and_speaks_the_api() -> None:
    policy = load_model(Policy, parse_document(FULL, "p.yaml"), "p.yaml")
    assert Policy.model_validate_json(policy.model_dump_json()) == policy
    research = policy.teams["research"]
    assert research.sharing is not None
    assert research.sharing.to_api() == {
        "Strategy": "LendAndBorrow", "BorrowLimit": 80,
        "AbsoluteBorrowLimits": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}]}
    assert policy.cluster is not None
    assert policy.cluster.to_api() == {
        "PriorityClasses": [{"Name": "inference", "Weight": 90}, {"Name": "training", "Weight": 50}],
        "FairShare": "Enabled", "IdleResourceSharing": "Disabled"}
    assert policy.active_teams() == ["research"]


def test_cpu_only_absolute_borrow_limit_is_in_vcpu() -> None:
    policy = Policy.model_validate({"teams": {"a": {"sharing": {
        "strategy": "LendAndBorrow", "absolute_borrow_limits": {"ml.c5.xlarge": 4}}}}})
    sharing = policy.teams["a"].sharing
    assert sharing is not None
    assert sharing.to_api()["AbsoluteBorrowLimits"] == [{"InstanceType": "ml.c5.xlarge", "VCpu": 4.0}]


@pytest.mark.parametrize(
    ("team", "field", "words"),
    [
        ({"guarantee": {"ml.p5": 16}, "cap": {"ml.p5e.48xlarge": 8}}, "teams.a",
         ["guarantee.ml.p5", "cap.ml.p5e.48xlarge"]),
        ({"guarantee": {"ml.p5.48xlarge": 8, "ml.p5": 16}}, "teams.a", ["ml.p5", "ml.p5.48xlarge"]),
        ({"guarantee": {"ml.p5": 1}, "cap": {"ml.p5e": 4}}, "teams.a", ["guarantee.ml.p5", "cap.ml.p5e"]),
        ({"guarantee": {"ml.p77": 1}}, "teams.a.guarantee", ["ml.p77", "neither"]),
        ({"vcpu": {"ml.c5.xlarge": 4}}, "teams.a.vcpu", ["ml.c5.xlarge", "CPU-only"]),
        ({"memory_gib": {"ml.p5.48xlarge:mig-1g.10gb": 4}}, "teams.a.memory_gib", ["mig-1g.10gb"]),
        ({"vcpu": {"ml.p5.48xlarge": "120%"}}, "teams.a.vcpu.ml.p5.48xlarge", ["120%"]),
        ({"vcpu": {"ml.p5.48xlarge": -4}}, "teams.a.vcpu.ml.p5.48xlarge", ["-4"]),
        ({"sharing": {"strategy": "Lend", "borrow_limit": 30}}, "teams.a.sharing", ["borrow_limit", "Lend"]),
        ({"sharing": {"strategy": "DontLend", "absolute_borrow_limits": {"ml.p5.48xlarge": 1}}},
         "teams.a.sharing", ["absolute_borrow_limits", "DontLend"]),
        ({"sharing": {"strategy": "Share"}}, "teams.a.sharing.strategy", ["Share"]),
        ({"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 10001}}, "teams.a.sharing.borrow_limit",
         ["10001", "1-500", "percent of idle compute"]),
        # the model allows 0-10000; the API reference documents 1-500 percent
        ({"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 501}}, "teams.a.sharing.borrow_limit",
         ["501", "1-500"]),
        ({"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 0}}, "teams.a.sharing.borrow_limit",
         ["got 0", "1-500"]),
        ({"sharing": {"strategy": "LendAndBorrow", "absolute_borrow_limits": {"ml.p5.48xlarge:mig-1g.10gb": 1}}},
         "teams.a.sharing.absolute_borrow_limits", ["MIG"]),
        ({"fair_share_weight": 101}, "teams.a.fair_share_weight", ["101"]),
        ({"preempt_team_tasks": "Always"}, "teams.a.preempt_team_tasks", ["Always"]),
        ({"remove": "soon"}, "teams.a.remove", ["soon"]),
    ],
)
def test_invalid_team_settings_name_field_and_value(team: dict[str, object], field: str, words: list[str]) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {"a": team}}, "policy.yaml")
    message = str(e.value)
    assert field in message
    for w in words:
        assert w in message


@pytest.mark.parametrize(
    ("cluster", "field", "words"),
    [
        ({"priority_classes": [{"name": f"p{i}", "weight": 1} for i in range(11)]}, "cluster.priority_classes",
         ["10"]),
        ({"priority_classes": [{"name": "Not_Valid", "weight": 1}]}, "cluster.priority_classes.0.name",
         ["Not_Valid"]),
        ({"priority_classes": [{"name": "a", "weight": 101}]}, "cluster.priority_classes.0.weight", ["101"]),
        ({"priority_classes": [{"name": "a", "weight": 1}, {"name": "a", "weight": 2}]},
         "cluster.priority_classes", ["unique", "a"]),
        ({"fair_share": "On"}, "cluster.fair_share", ["On"]),
        ({"idle_resource_sharing": True}, "cluster.idle_resource_sharing", ["True"]),
    ],
)
def test_invalid_cluster_policy_names_field_and_value(cluster: dict[str, object], field: str,
                                                       words: list[str]) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {}, "cluster": cluster}, "policy.yaml")
    message = str(e.value)
    assert field in message
    for w in words:
        assert w in message


@pytest.mark.parametrize("limit", [1, 50, 500])
def test_borrow_limits_across_the_documented_range_are_accepted(limit: int) -> None:
    policy = load_model(Policy, {"teams": {"a": {"sharing": {"strategy": "LendAndBorrow", "borrow_limit": limit}}}},
                        "policy.yaml")
    sharing = policy.teams["a"].sharing
    assert sharing is not None
    assert sharing.to_api() == {"Strategy": "LendAndBorrow", "BorrowLimit": limit}
