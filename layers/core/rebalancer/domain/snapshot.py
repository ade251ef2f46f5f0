"""The cluster snapshot, in the shapes AWS returns, so that what `collect` stores can be replayed.

Field names of AWS shapes are kept exactly as the API spells them (PascalCase): a snapshot is DescribeCluster,
ListClusterNodes and DescribeComputeQuota output plus the demand read from Kueue.
"""


from collections import Counter
from datetime import UTC, datetime
from typing import Any

from pydantic import (
    AwareDatetime,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    model_validator,
)

from rebalancer.domain.frozen import AwsShape, Frozen
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota


class InstanceTypeDetail(AwsShape):
    InstanceType: str | None = None
    CurrentCount: NonNegativeInt | None = None


class ClusterCapacityRequirements(AwsShape):
    """ClusterCapacityRequirements: which of Spot / OnDemand the group runs on (each an empty options object)."""

    Spot: dict[str, Any] | None = None
    OnDemand: dict[str, Any] | None = None


class InstanceGroup(AwsShape):
    """ClusterInstanceGroupDetails: in the model no field is required. A flexible instance group has no
    InstanceType but InstanceRequirements (the types allowed) and InstanceTypeDetails (the types it runs, with
    counts); its capacity per type comes from the nodes (ListClusterNodes), like every group's.
    `ActiveOperations`: operations in progress on the group by name (`Scaling`) and count."""

    InstanceGroupName: str | None = None
    InstanceType: str | None = None
    InstanceTypeDetails: tuple[InstanceTypeDetail, ...] | None = None
    CurrentCount: NonNegativeInt = 0
    TargetCount: NonNegativeInt | None = None
    MinCount: NonNegativeInt | None = None
    Status: str | None = None
    CapacityRequirements: ClusterCapacityRequirements | None = None
    TrainingPlanArn: str | None = None
    TrainingPlanStatus: str | None = None
    ActiveOperations: dict[str, NonNegativeInt] | None = None

    @property
    def spot(self) -> bool:
        return self.CapacityRequirements is not None and self.CapacityRequirements.Spot is not None

    def instance_types(self) -> tuple[str, ...]:
        types = [self.InstanceType] if self.InstanceType else []
        types += [d.InstanceType for d in self.InstanceTypeDetails or () if d.InstanceType]
        return tuple(dict.fromkeys(types))


class ClusterAutoScaling(AwsShape):
    """ClusterAutoScalingConfigOutput: Mode Enable | Disable, AutoScalerType Karpenter, Status."""

    Mode: str
    Status: str | None = None
    AutoScalerType: str | None = None


class Cluster(AwsShape):
    """DescribeCluster output. The model requires ClusterArn, ClusterStatus and InstanceGroups but not ClusterName;
    the reader fills it in with the name it asked for."""

    ClusterName: str
    ClusterArn: str
    ClusterStatus: str | None = None
    InstanceGroups: tuple[InstanceGroup, ...] = ()
    AutoScaling: ClusterAutoScaling | None = None

    @property
    def autoscaled(self) -> bool:
        return self.AutoScaling is not None and self.AutoScaling.Mode == "Enable"

    def group(self, name: str) -> InstanceGroup | None:
        return next((g for g in self.InstanceGroups if g.InstanceGroupName == name), None)


class NodeStatus(AwsShape):
    Status: str
    Message: str | None = None


class ClusterNode(AwsShape):
    """ClusterNodeSummary. Spot or on-demand is the group's (CapacityRequirements): the per-node CapacityType is
    DescribeClusterNode's, one call per node."""

    InstanceGroupName: str
    InstanceId: str
    InstanceType: str
    InstanceStatus: NodeStatus


class TrainingPlan(AwsShape):
    """What DescribeTrainingPlan says of a plan an instance group runs on: when its capacity goes."""

    TrainingPlanArn: str
    TrainingPlanName: str | None = None
    Status: str | None = None
    EndTime: AwareDatetime | None = None


class ClusterOperation(Frozen):
    """An InProgress ListClusterOperations entry (OperationId, Type, Status, CreationTime as the API spells them)
    with the groups and nodes its DescribeClusterOperation names (ScalingDetails, DeepHealthCheckDetails) and, for
    Scaling, each group's desired TargetCount (`ScalingDetails[].Desired.TargetCount`)."""

    OperationId: str
    Type: str
    Status: str
    CreationTime: AwareDatetime | None = None
    InstanceGroupNames: tuple[str, ...] = ()
    InstanceIds: tuple[str, ...] = ()
    TargetCounts: dict[str, NonNegativeInt] = Field(default_factory=dict)


class Resources(Frozen):
    """Amounts of one team's demand on one instance type. All optional; absent means zero."""

    accelerators: NonNegativeFloat = 0
    vcpu: NonNegativeFloat = 0
    memory_gib: NonNegativeFloat = 0
    partitions: NonNegativeFloat = 0

    def get(self, resource: str) -> float:
        return float(getattr(self, resource))


class Demand(Frozen):
    in_use: Resources = Field(default_factory=Resources)
    pending: Resources = Field(default_factory=Resources)
    # When the oldest of the team's pending workloads on this pool was created (Kueue Workload
    # metadata.creationTimestamp); None: nothing pending, or not read. Read only by `fairness.age_doubling_hours`.
    oldest_pending: AwareDatetime | None = None

    def total(self, resource: str) -> float:
        return self.in_use.get(resource) + self.pending.get(resource)


# Nothing in use, nothing pending: one value for every (team, pool) without demand (the model is frozen), not a new
# model each time a pool is read for a team (150,000 of them per read of a 10,000-team cluster).
NO_DEMAND = Demand()


class Utilization(Frozen):
    """A team's average accelerator utilization (percent) over a window, from CloudWatch Container Insights.
    None: no data (no pods of that kind ran, or Container Insights is not set up)."""

    window_minutes: NonNegativeInt
    gpu_percent: NonNegativeFloat | None = None
    neuroncore_percent: NonNegativeFloat | None = None


class Governance(Frozen):
    """The cluster's task-governance prerequisites as collect found them (rebalancer.adapters.prerequisites): the EKS
    add-on and the Kueue API it installs, one line per failed check saying what to fix (`problems`: they bear on
    every plan) and one per warning (`advisories`: something to do before it bites, like updating the add-on before
    Kueue drops an API version; the controller announces each once, `rebalancer doctor` lists them every time)."""

    addon_version: str | None = None
    addon_status: str | None = None
    kueue_api_version: str | None = None
    problems: tuple[str, ...] = ()
    advisories: tuple[str, ...] = ()


class PendingWorkload(Frozen):
    """One Kueue Workload waiting for quota, as collect read it: its team, the instance type its accelerators wait
    for (`pool`), their total over its pod sets (count × per-pod request, summed) and how many pods, when it was
    created (metadata.creationTimestamp) and the topology level it asks for, if any. Kueue admits a workload whole
    or not at all, so a quota raise smaller than its size lets nothing of it start."""

    name: str
    team: str
    pool: str  # instance type
    accelerators: float  # total over its pod sets
    pods: int
    created: AwareDatetime | None = None
    topology: str | None = None
    # What it says of its run time, in seconds (adapters/kubernetes/run_time.py): the run time it declares and the
    # longest Kueue lets it run. None: not said.
    declared_s: PositiveFloat | None = None
    limit_s: PositiveFloat | None = None

    @property
    def admission_order(self) -> tuple[datetime, str, str]:
        """The order Kueue's BestEffortFIFO queues consider workloads in: oldest first (one without a creation time
        last), then by name (and pool, for the entries of one workload on several types)."""
        return (self.created or _NEVER, self.name, self.pool)


class RunningWorkload(Frozen):
    """One admitted Kueue Workload, as collect read it: its team, the instance type its accelerators run on, their
    total over its pod sets, and since when it holds its quota (its Admitted condition's lastTransitionTime; None:
    not said). What the estimated starts read (rebalancer.planning.eta): how long each has run so far."""

    name: str
    team: str
    pool: str  # instance type
    accelerators: float
    pods: int
    started: AwareDatetime | None = None
    declared_s: PositiveFloat | None = None  # as a PendingWorkload's
    limit_s: PositiveFloat | None = None
    # Its spec.priority (None: not said): Kueue reclaims the lowest priority first, then the newest admitted.
    priority: int | None = None


_NEVER = datetime.max.replace(tzinfo=UTC)
HEALTHY_NODE_STATUS = "Running"
NODE_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"  # HyperPod's resiliency labels, on each node
ESTIMATED_DURATION = "kueue.x-k8s.io/estimated-duration"  # a Workload's annotation: the run time it declares


class Snapshot(Frozen):
    """Everything a plan is computed from. `demand[team][instance_type]` (or `[team]["<type>:<mig profile>"]` for
    MIG partitions); a team with no entry has zero demand."""

    taken_at: AwareDatetime  # a time without a zone is refused: UTC or not is not ours to guess
    cluster: Cluster
    nodes: tuple[ClusterNode, ...] = ()
    quotas: tuple[ComputeQuota, ...] = ()
    demand: dict[str, dict[str, Demand]] = Field(default_factory=dict)
    # Healthy MIG partitions per instance type and profile (node allocatable `nvidia.com/mig-…`); see allocation.py.
    mig: dict[str, dict[str, NonNegativeInt]] = Field(default_factory=dict)
    # Per team; informational for now (reports, alarms), the planner does not read it.
    utilization: dict[str, Utilization] = Field(default_factory=dict)
    # Tags of each quota (ListTags), by ComputeQuotaId; a quota without an entry: not read. Only ownership reads
    # them (a quota CloudFormation created is held outside the policy, see ownership.py).
    quota_tags: dict[str, dict[str, str]] = Field(default_factory=dict)
    # The cluster's scheduler config; None when it has none or it was not read (then a policy with a `cluster`
    # section plans a Create, which the API refuses if one exists: nothing is overwritten unseen).
    scheduler_config: ClusterSchedulerConfig | None = None
    # None when not checked (snapshots from files, `--no-kube`); its problems become warnings of the plan.
    governance: Governance | None = None
    # HyperPod's `sagemaker.amazonaws.com/node-health-status` label by InstanceId, from the Kubernetes nodes; a node
    # without an entry: not read (or not labelled). See rebalancer.planning.capacity.
    node_health: dict[str, str] = Field(default_factory=dict)
    # The training plans the instance groups run on, by ARN (DescribeTrainingPlan). Cluster operations in progress
    # (ListClusterOperations / DescribeClusterOperation): collect reads them where allowed, else the groups'
    # ActiveOperations (DescribeCluster) alone say what scales (and no DeepHealthCheck is seen).
    training_plans: dict[str, TrainingPlan] = Field(default_factory=dict)
    operations: tuple[ClusterOperation, ...] = ()
    # The autoscaler's ceiling read from the cluster (Karpenter NodePool limits: adapters/kubernetes/karpenter),
    # nodes per instance type; when present it wins over the policy's cluster.autoscaling.max_nodes.
    autoscaling_max_nodes: dict[str, NonNegativeInt] = Field(default_factory=dict)
    # Per team, its pending workloads that ask for a topology level (Kueue topology-aware scheduling): a raise of
    # quota need not let a gang that needs one block or rack start, and the plan says so.
    topology_pending: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # Per team, how many more pending workloads ask for a topology level than `topology_pending` names (collect
    # names a few per team: rebalancer.adapters.kubernetes.kueue.TOPOLOGY_LISTED).
    topology_unlisted: dict[str, NonNegativeInt] = Field(default_factory=dict)
    # Every pending workload with accelerators (one entry per Kueue Workload and instance type), in the order
    # collect listed them, up to a bound per team and type (its first in admission order; demand counts them all);
    # read by `fairness.gang_steps` (rebalancer.engine.gangs).
    pending_workloads: tuple[PendingWorkload, ...] = ()
    # Every admitted, unfinished workload with accelerators (one entry per Kueue Workload and instance type); read
    # by the estimated starts only, not by the planner.
    running_workloads: tuple[RunningWorkload, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _stored_before_the_planning_context(cls, data: Any) -> Any:
        """Snapshots stored before budget use moved to the planning context (rebalancer.planning.context) carry an
        empty `budget_usage`: dropped. One with figures in it is refused, as any unknown field is."""
        if isinstance(data, dict) and data.get("budget_usage", None) == {}:
            return {k: v for k, v in data.items() if k != "budget_usage"}
        return data

    def healthy_nodes(self) -> Counter[str]:
        """Healthy (Running) nodes per instance type."""
        return Counter(n.InstanceType for n in self.nodes if n.InstanceStatus.Status == HEALTHY_NODE_STATUS)

    def unhealthy_nodes(self) -> Counter[str]:
        return Counter(n.InstanceType for n in self.nodes if n.InstanceStatus.Status != HEALTHY_NODE_STATUS)

    def instance_types(self) -> tuple[str, ...]:
        types = {t for g in self.cluster.InstanceGroups for t in g.instance_types()}
        types |= {n.InstanceType for n in self.nodes}
        return tuple(sorted(types))

    def quota_of(self, team: str) -> ComputeQuota | None:
        return next((q for q in self.quotas if q.team == team), None)

    def demand_of(self, team: str, instance_type: str) -> Demand:
        return self.demand.get(team, {}).get(instance_type, NO_DEMAND)
