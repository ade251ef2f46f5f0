"""The demo cluster: one place for its name, instance groups, teams and their quotas.

ml.p5.48xlarge ×4 (32 H100), ml.trn1.32xlarge ×2 (32 Trainium devices), ml.g5.12xlarge ×3 (12 A10G); five teams
whose quotas add up exactly to that capacity, and a cluster scheduler config with three priority classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rebalancer_tools.emulator.control import Emulator, GroupSpec
from rebalancer_tools.emulator.resources import Kind
from rebalancer_tools.emulator.shapes import validate_request


@dataclass(frozen=True, slots=True)
class DemoTeam:
    name: str
    weight: int
    accelerators: dict[str, int]  # instance type → accelerators

    @property
    def quota_name(self) -> str:
        return f"{self.name}-quota"


@dataclass(frozen=True, slots=True)
class DemoSpec:
    cluster_name: str
    groups: tuple[GroupSpec, ...]
    teams: tuple[DemoTeam, ...]
    scheduler_config_name: str
    priority_classes: tuple[tuple[str, int], ...]
    borrow_limit: int = 50


P5, TRN1, G5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.g5.12xlarge"

DEMO = DemoSpec(
    cluster_name="demo-hyperpod",
    groups=(GroupSpec("gpu-p5", P5, 4), GroupSpec("trainium-trn1", TRN1, 2), GroupSpec("gpu-g5", G5, 3)),
    teams=(
        DemoTeam("research", 30, {P5: 12, TRN1: 8}),
        DemoTeam("training", 30, {P5: 12, TRN1: 16}),
        DemoTeam("inference", 20, {P5: 4, G5: 6}),
        DemoTeam("data-science", 10, {P5: 4, G5: 4}),
        DemoTeam("platform", 10, {TRN1: 8, G5: 2}),
    ),
    scheduler_config_name="demo-hyperpod-policy",
    priority_classes=(("inference", 90), ("training", 70), ("experimentation", 30)),
)


@dataclass(frozen=True, slots=True)
class SeededDemo:
    cluster_arn: str
    quota_ids: dict[str, str] = field(default_factory=dict)  # team → ComputeQuotaId
    scheduler_config_id: str = ""


def quota_request(spec: DemoSpec, team: DemoTeam, cluster_arn: str) -> dict[str, Any]:
    """The CreateComputeQuota request for one demo team."""
    return {
        "Name": team.quota_name,
        "ClusterArn": cluster_arn,
        "Description": f"Compute allocation of team {team.name}",
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [
                {"InstanceType": t, "Accelerators": n} for t, n in sorted(team.accelerators.items())
            ],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": spec.borrow_limit},
            "PreemptTeamTasks": "LowerPriority",
        },
        "ComputeQuotaTarget": {"TeamName": team.name, "FairShareWeight": team.weight},
        "ActivationState": "Enabled",
    }


def seed_demo(emulator: Emulator, spec: DemoSpec = DEMO) -> SeededDemo:
    """Create the demo cluster, one quota per team and the scheduler config, all settled."""
    arn = emulator.create_cluster(spec.cluster_name, spec.groups)
    gov = emulator.gov
    quota_ids: dict[str, str] = {}
    for team in spec.teams:
        request = quota_request(spec, team, arn)
        validate_request("CreateComputeQuota", request)
        quota_ids[team.name] = gov.create(Kind.COMPUTE_QUOTA, request, "control:seed-demo").resource_id
    config = {
        "Name": spec.scheduler_config_name,
        "ClusterArn": arn,
        "SchedulerConfig": {
            "PriorityClasses": [{"Name": n, "Weight": w} for n, w in spec.priority_classes],
            "FairShare": "Enabled",
            "IdleResourceSharing": "Enabled",
        },
    }
    validate_request("CreateClusterSchedulerConfig", config)
    config_id = gov.create(Kind.SCHEDULER_CONFIG, config, "control:seed-demo").resource_id
    emulator.settle()
    return SeededDemo(arn, quota_ids, config_id)
