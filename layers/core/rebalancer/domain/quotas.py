"""The task-governance side of a cluster in the shapes the SageMaker API returns: compute quotas (one per team)
and the cluster scheduler config. Apart from the snapshot because the steps that write them (apply, verify,
rollback) read a run's quotas and config, never its nodes or demand."""

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt

from rebalancer.domain.frozen import AwsShape

# The ranges the API takes (botocore's SageMaker model; tests/unit/planning/test_api_ranges.py reads them from it):
# every amount of a ComputeQuotaResourceConfig (Count, Accelerators, VCpu, MemoryInGiB, AcceleratorPartition.Count),
# ResourceSharingConfig.BorrowLimit and ComputeQuotaTarget.FairShareWeight. A request outside them is refused.
AMOUNT_RANGE = (0, 10_000_000)
BORROW_LIMIT_RANGE = (0, 10_000)
FAIR_SHARE_WEIGHT_RANGE = (0, 100)


class AcceleratorPartitionConfig(AwsShape):
    Type: str
    Count: NonNegativeInt


class ComputeQuotaResource(AwsShape):
    InstanceType: str
    Count: NonNegativeInt | None = None
    Accelerators: NonNegativeInt | None = None
    VCpu: NonNegativeFloat | None = None
    MemoryInGiB: NonNegativeFloat | None = None
    AcceleratorPartition: AcceleratorPartitionConfig | None = None


class SharingConfig(AwsShape):
    Strategy: Literal["Lend", "DontLend", "LendAndBorrow"]
    BorrowLimit: NonNegativeInt | None = None
    AbsoluteBorrowLimits: tuple[ComputeQuotaResource, ...] | None = None


class QuotaConfig(AwsShape):
    ComputeQuotaResources: tuple[ComputeQuotaResource, ...] = ()
    ResourceSharingConfig: SharingConfig | None = None
    PreemptTeamTasks: Literal["Never", "LowerPriority"] | None = None


class QuotaTarget(AwsShape):
    TeamName: str
    FairShareWeight: NonNegativeInt | None = None


class ComputeQuota(AwsShape):
    """A DescribeComputeQuota response."""

    ComputeQuotaId: str
    Name: str
    ComputeQuotaVersion: int
    Status: str
    ComputeQuotaTarget: QuotaTarget
    ComputeQuotaConfig: QuotaConfig = Field(default_factory=QuotaConfig)
    ComputeQuotaArn: str | None = None
    ClusterArn: str | None = None
    ActivationState: Literal["Enabled", "Disabled"] | None = None
    CreationTime: datetime | None = None
    LastModifiedTime: datetime | None = None

    @property
    def team(self) -> str:
        return self.ComputeQuotaTarget.TeamName

    def resource(self, instance_type: str) -> ComputeQuotaResource | None:
        return next((r for r in self.ComputeQuotaConfig.ComputeQuotaResources if r.InstanceType == instance_type),
                    None)

    def updated(self, parameters: Mapping[str, Any], **fields: Any) -> "ComputeQuota":
        """The quota as it is once an UpdateComputeQuota with `parameters` is applied (`fields`: what the service
        sets besides, such as the version)."""
        update: dict[str, Any] = dict(fields)
        if "ComputeQuotaConfig" in parameters:
            update["ComputeQuotaConfig"] = QuotaConfig.model_validate(parameters["ComputeQuotaConfig"])
        if "ComputeQuotaTarget" in parameters:
            update["ComputeQuotaTarget"] = QuotaTarget.model_validate(parameters["ComputeQuotaTarget"])
        if "ActivationState" in parameters:
            update["ActivationState"] = parameters["ActivationState"]
        return self.model_copy(update=update)


class ClusterSchedulerConfig(AwsShape):
    """A DescribeClusterSchedulerConfig response (SchedulerConfig: PriorityClasses, FairShare,
    IdleResourceSharing, as the API spells them)."""

    ClusterSchedulerConfigId: str
    Name: str
    ClusterSchedulerConfigVersion: int
    Status: str
    SchedulerConfig: dict[str, Any] = Field(default_factory=dict)
    ClusterSchedulerConfigArn: str | None = None
    ClusterArn: str | None = None
    LastModifiedTime: datetime | None = None
