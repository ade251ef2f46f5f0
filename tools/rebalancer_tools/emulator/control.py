"""The Python control API over the emulator of one account and region.

Works whenever the caller shares moto's backends: inside `mock_aws`, or in the process that runs the server
(ThreadedMotoServer / `EmulatorServer`). For a server in another process, `RemoteEmulator` (http_control) offers
the same controls over HTTP.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moto.sagemaker.models import sagemaker_backends

from rebalancer.domain.clock import Clock
from rebalancer_tools.emulator import cluster_changes, cluster_operations, cluster_state
from rebalancer_tools.emulator.faults import FaultInjector, FaultKind, FaultRule
from rebalancer_tools.emulator.governance import Governance, Settings, governance
from rebalancer_tools.emulator.install import install
from rebalancer_tools.emulator.invariant import InvariantMonitor
from rebalancer_tools.emulator.resources import Kind

DEFAULT_ACCOUNT = "123456789012"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class GroupSpec:
    name: str
    instance_type: str
    count: int


class Emulator:
    """Controls for tests and the demo. Every method acts on the live moto state; nothing is cached here."""

    def __init__(self, account_id: str = DEFAULT_ACCOUNT, region: str = DEFAULT_REGION, *,
                 clock: Clock | None = None) -> None:
        install()
        self.account_id = account_id
        self.region = region
        if clock is not None:
            self.gov.clock = clock

    @property
    def backend(self) -> Any:
        return sagemaker_backends[self.account_id][self.region]

    @property
    def gov(self) -> Governance:
        return governance(self.backend)

    @property
    def faults(self) -> FaultInjector:
        return self.gov.faults

    @property
    def monitor(self) -> InvariantMonitor:
        return self.gov.monitor

    @property
    def settings(self) -> Settings:
        return self.gov.settings

    def set_clock(self, clock: Clock) -> None:
        self.gov.clock = clock

    def set_transition_reads(self, reads: int) -> None:
        """Describe calls that still see Creating / Updating after each write (0: instant)."""
        if reads < 0:
            raise ValueError(f"transition_reads must be ≥ 0, got {reads}")
        self.settings.transition_reads = reads

    # ---- clusters --------------------------------------------------------------------------------------------

    def create_cluster(self, name: str, groups: Iterable[GroupSpec | tuple[str, str, int]]) -> str:
        """A HyperPod (EKS-orchestrated) cluster whose nodes are all Running. Returns its ARN."""
        specs = [g if isinstance(g, GroupSpec) else GroupSpec(*g) for g in groups]
        for s in specs:
            cluster_changes.check_instance_type(s.instance_type)
        instance_groups = [
            cluster_changes.with_group_defaults(self.account_id, {
                "InstanceGroupName": s.name, "InstanceType": s.instance_type, "InstanceCount": s.count,
            }) for s in specs
        ]
        with self.gov.lock:
            arn = self.backend.create_cluster(cluster_name=name, instance_groups=instance_groups,
                                              vpc_config={"SecurityGroupIds": [], "Subnets": []}, tags=[])
        return str(arn)

    def cluster_arn(self, name: str) -> str:
        return str(cluster_changes.require_cluster(self.gov, name).arn)

    def set_eks_cluster(self, cluster: str, eks_cluster_name: str) -> None:
        """Name the EKS cluster behind a HyperPod cluster: DescribeCluster then shows Orchestrator.Eks.ClusterArn
        (what Container Insights metrics are dimensioned by)."""
        c = cluster_changes.require_cluster(self.gov, cluster)
        c.eks_cluster_arn = f"arn:aws:eks:{self.region}:{self.account_id}:cluster/{eks_cluster_name}"

    def provision_eks(self, cluster: str, eks_cluster_name: str, *, addon_version: str | None = "v1.0.0-eksbuild.1",
                      access_entries: dict[str, list[str]] | None = None) -> None:
        """The EKS side of task governance for a HyperPod cluster: the EKS cluster (moto's), named as its
        orchestrator; the task-governance add-on, ACTIVE at `addon_version` (None: not installed); and an access
        entry per role ARN with its Kubernetes groups. Each prerequisite can be left out to test `doctor`."""
        from rebalancer.adapters.prerequisites import ADDON
        from rebalancer_tools.emulator import prerequisites

        self.set_eks_cluster(cluster, eks_cluster_name)
        prerequisites.provision(self.account_id, self.region, eks_cluster_name, addon=ADDON,
                                addon_version=addon_version, access_entries=access_entries or {})

    def set_addon_status(self, eks_cluster_name: str, status: str, issue: str | None = None) -> None:
        from rebalancer.adapters.prerequisites import ADDON
        from rebalancer_tools.emulator.prerequisites import set_addon_status

        set_addon_status(self.account_id, self.region, eks_cluster_name, ADDON, status, issue)

    def nodes(self, cluster: str, *, group: str | None = None) -> list[dict[str, Any]]:
        c = cluster_changes.require_cluster(self.gov, cluster)
        return [n.summary() for n in c.nodes.values() if group is None or n.instance_group_name == group]

    def set_node_status(self, cluster: str, node_id: str, status: str, message: str | None = None) -> None:
        cluster_changes.set_node_status(self.gov, cluster, node_id, status, message)

    def fail_node(self, cluster: str, node_id: str, message: str = "Node failed a health check") -> None:
        self.set_node_status(cluster, node_id, "Failure", message)

    def heal_node(self, cluster: str, node_id: str) -> None:
        self.set_node_status(cluster, node_id, "Running")

    def resize_instance_group(self, cluster: str, group: str, count: int) -> None:
        cluster_changes.resize_instance_group(self.gov, cluster, group, count)

    # ---- today's HyperPod (rebalancer_tools.emulator.cluster_state) ----
    def set_autoscaling(self, cluster: str, mode: str = "Enable") -> None:
        cluster_state.set_autoscaling(self.gov, cluster, mode)

    def set_group_fields(self, cluster: str, group: str, **fields: Any) -> None:
        cluster_state.set_group_fields(self.gov, cluster, group, **fields)

    def add_training_plan(self, name: str, *, end_time: datetime, instances: int = 0) -> str:
        return cluster_state.add_training_plan(self.gov, name, end_time=end_time, instances=instances)

    def start_operation(self, cluster: str, kind: str, groups: dict[str, int | None], *,
                        instance_ids: tuple[str, ...] = ()) -> str:
        """A Scaling (groups: name → desired TargetCount) or DeepHealthCheck operation in progress; its id."""
        return cluster_operations.start_operation(self.gov, cluster, kind, groups, instance_ids=instance_ids)

    def finish_operation(self, cluster: str, operation_id: str, status: str = "Done") -> None:
        cluster_operations.finish_operation(self.gov, cluster, operation_id, status)

    def add_instance_group(self, cluster: str, group: GroupSpec | tuple[str, str, int]) -> None:
        s = group if isinstance(group, GroupSpec) else GroupSpec(*group)
        cluster_changes.add_instance_group(self.gov, cluster, {
            "InstanceGroupName": s.name, "InstanceType": s.instance_type, "InstanceCount": s.count})

    @property
    def events(self) -> list[dict[str, Any]]:
        """EventBridge-shaped events of the cluster changes made here (node health, resizes), oldest first.
        Nothing delivers them: hand them to the trigger in e2e tests and the demo."""
        return list(self.gov.events)

    def healthy_capacity(self, cluster: str) -> dict[tuple[str, str], float]:
        return self.gov.cluster_capacity(cluster_changes.require_cluster(self.gov, cluster))

    def allocated(self, cluster: str) -> dict[tuple[str, str], float]:
        """What the cluster's quotas ask for, per (instance type, resource) asked for at all."""
        return self.gov.cluster_allocated(self.cluster_arn(cluster))

    # ---- quotas and scheduler configs ------------------------------------------------------------------------

    def quota(self, name: str, cluster: str | None = None) -> dict[str, Any]:
        """The current DescribeComputeQuota view of a quota, without counting as a Describe call."""
        arn = self.cluster_arn(cluster) if cluster else None
        with self.gov.lock:
            return self.gov.by_name(Kind.COMPUTE_QUOTA, name, arn).describe()

    def quotas(self, cluster: str | None = None) -> list[dict[str, Any]]:
        arn = self.cluster_arn(cluster) if cluster else None
        with self.gov.lock:
            return [r.describe() for r in self.gov.resources.values()
                    if r.kind is Kind.COMPUTE_QUOTA and r.live and arn in (None, r.cluster_arn)]

    def settle(self) -> None:
        """Finish every pending status transition now."""
        self.gov.settle_all()

    def external_edit(self, name: str, edit: dict[str, Any] | None = None, *, cluster: str | None = None,
                      kind: Kind = Kind.COMPUTE_QUOTA) -> int:
        """An admin edits the quota (or config) in the console: its version goes up. Returns the new version."""
        arn = self.cluster_arn(cluster) if cluster else None
        with self.gov.lock:
            r = self.gov.by_name(kind, name, arn)
            return self.gov.external_edit(r, copy.deepcopy(edit)).version

    # ---- faults ----------------------------------------------------------------------------------------------

    def inject(self, kind: FaultKind | str, operation: str | None = None, **options: Any) -> FaultRule:
        """Add a fault rule (see FaultRule for the options: team, name, skip, times, probability, ...)."""
        return self.faults.add(FaultRule(FaultKind(kind), operation, **options))

    def seed_faults(self, seed: int) -> None:
        self.faults.reseed(seed)

    def clear_faults(self) -> None:
        self.faults.clear()


def groups(*specs: tuple[str, str, int]) -> Sequence[GroupSpec]:
    return [GroupSpec(*s) for s in specs]
