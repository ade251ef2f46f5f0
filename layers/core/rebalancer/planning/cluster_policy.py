"""The cluster policy (priority classes, fair share, idle-resource sharing) against the cluster's scheduler config:
which Create/UpdateClusterSchedulerConfig call, if any, makes the cluster match. Pure.

Only the fields the policy states are managed; the others keep what the cluster has. An update carries
TargetVersion = the version read, so an edit made after the read is refused by the API, never overwritten."""

from __future__ import annotations

from collections.abc import Mapping

from rebalancer.domain.names import scheduler_config_name
from rebalancer.domain.ownership import SCHEDULER_DESCRIPTION, tags
from rebalancer.domain.plan import CLUSTER, FieldChange, SchedulerRequest
from rebalancer.domain.policy import ClusterPolicy
from rebalancer.domain.quotas import ClusterSchedulerConfig
from rebalancer.planning.field_diff import field_diff


def plan_scheduler_config(cluster_name: str, cluster_arn: str, current: ClusterSchedulerConfig | None,
                          wanted: ClusterPolicy, *, known_version: int | None = None,
                          ) -> tuple[SchedulerRequest | None, list[FieldChange]]:
    """The request (None when in sync) and the fields it changes. `known_version` is the version our last write
    left (from the audit); a different one, or none known, marks the differences as console edits."""
    fields = wanted.to_api()
    if current is None:
        request = SchedulerRequest(operation="CreateClusterSchedulerConfig", parameters={
            "Name": scheduler_config_name(cluster_name), "ClusterArn": cluster_arn, "SchedulerConfig": fields,
            "Description": SCHEDULER_DESCRIPTION, "Tags": tags()})
        return request, [FieldChange(team=CLUSTER, field="SchedulerConfig", after=fields,
                                     reason="the cluster has no scheduler config: created")]
    have: Mapping[str, object] = current.SchedulerConfig
    merged = {**have, **fields}
    diffs = field_diff({"SchedulerConfig": dict(have)}, {"SchedulerConfig": merged})
    if not diffs:
        return None, []
    console = known_version is None or known_version != current.ClusterSchedulerConfigVersion
    reason = "console edit will be replaced" if console else "policy changed"
    request = SchedulerRequest(operation="UpdateClusterSchedulerConfig", parameters={
        "ClusterSchedulerConfigId": current.ClusterSchedulerConfigId,
        "TargetVersion": current.ClusterSchedulerConfigVersion, "SchedulerConfig": merged})
    return request, [FieldChange(team=CLUSTER, field=f, before=b, after=a, console_edit=console, reason=reason)
                     for f, b, a in diffs]
