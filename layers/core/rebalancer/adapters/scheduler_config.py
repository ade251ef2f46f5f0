"""Reading and writing a cluster's scheduler config (priority classes, fair share, idle-resource sharing).

Same rules as the quota writer: the update carries the TargetVersion read; a ConflictException means someone else
changed the config since, so we re-read, stop and report both versions (never retry with the new version); the
write is polled (injected sleep and clock, bounded) until Created / Updated; errors are one line of the right kind.
"""

from __future__ import annotations

from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.adapters.quota_writer import SETTLED, Poller, is_failed
from rebalancer.errors import ApplyFailed, ConflictError, RebalancerError, TransientError
from rebalancer.models import ClusterSchedulerConfig
from rebalancer.plan import SchedulerRequest

GONE_STATUSES = frozenset({"Deleting", "Deleted"})


class SchedulerConfigClient:
    def __init__(self, sagemaker: Any, poller: Poller | None = None):
        self.sm = sagemaker
        self.poller = poller or Poller()

    def describe(self, config_id: str) -> ClusterSchedulerConfig:
        with aws_call("DescribeClusterSchedulerConfig", f"scheduler config {config_id}"):
            out = dict(self.sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id))
        out.pop("ResponseMetadata", None)
        return ClusterSchedulerConfig.model_validate(out)

    def read(self, cluster_arn: str) -> ClusterSchedulerConfig | None:
        """The cluster's live scheduler config (HyperPod allows one per cluster), or None."""
        ids: list[str] = []
        with aws_call("ListClusterSchedulerConfigs", f"cluster {cluster_arn}"):
            pages = self.sm.get_paginator("list_cluster_scheduler_configs").paginate(ClusterArn=cluster_arn)
            for page in pages:
                ids += [s["ClusterSchedulerConfigId"] for s in page.get("ClusterSchedulerConfigSummaries", [])
                        if s.get("Status") not in GONE_STATUSES]
        live = [c for c in (self.describe(i) for i in ids) if c.Status not in GONE_STATUSES]
        return min(live, key=lambda c: c.ClusterSchedulerConfigId) if live else None

    def apply(self, request: SchedulerRequest) -> ClusterSchedulerConfig:
        """Run one planned request and wait until it settles. ConflictError when the config changed since it was
        read (nothing overwritten); ApplyFailed when it ended in *Failed; TransientError when it did not settle."""
        params = request.parameters
        if request.operation == "CreateClusterSchedulerConfig":
            with aws_call(request.operation, f"cluster {params.get('ClusterArn')}"):
                out = self.sm.create_cluster_scheduler_config(**params)
            config_id = str(out["ClusterSchedulerConfigId"])
        else:
            config_id = str(params["ClusterSchedulerConfigId"])
            try:
                with aws_call(request.operation, f"scheduler config {config_id}"):
                    self.sm.update_cluster_scheduler_config(**params)
            except ConflictError as e:
                raise ConflictError(self._conflict_report(config_id, params.get("TargetVersion"), str(e))) from e
        return self.wait(config_id)

    def _conflict_report(self, config_id: str, read: object, aws_said: str) -> str:
        try:
            now = self.describe(config_id)
        except RebalancerError as e:
            return f"{aws_said}; re-reading it failed too ({e}); stopped, nothing overwritten"
        return (f"scheduler config {config_id} was changed by someone else: we read version {read}, it is now "
                f"version {now.ClusterSchedulerConfigVersion} ({now.Status}). Stopped without overwriting it; "
                "re-read the cluster and plan again")

    def wait(self, config_id: str) -> ClusterSchedulerConfig:
        deadline = self.poller.clock() + self.poller.timeout
        while True:
            config = self.describe(config_id)
            if config.Status in SETTLED:
                return config
            if is_failed(config.Status):
                reason = getattr(config, "FailureReason", None) or "no FailureReason given"
                raise ApplyFailed(f"scheduler config {config_id} ended in {config.Status}: {reason}")
            if self.poller.clock() >= deadline:
                raise TransientError(f"DescribeClusterSchedulerConfig: {config_id} has not settled after "
                                     f"{self.poller.timeout:g} s")
            self.poller.sleep(self.poller.interval)
