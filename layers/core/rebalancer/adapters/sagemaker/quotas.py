"""Reading a cluster's task governance from SageMaker, as the quota models: its compute quotas and its scheduler
config. What collect reads with the cluster, and all the writers read (a version before and after a write), so the
writing steps load no cluster shape and collect loads no writer."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota
from rebalancer.parsing.validation import load_model

# Quotas on their way out hold no capacity and cannot be updated.
GONE_STATUSES = frozenset({"Deleting", "Deleted"})


class QuotaReader:
    def __init__(self, sagemaker: Any, page_size: int = 100):
        self.sm = sagemaker
        self.page_size = page_size

    def tags(self, arn: str) -> dict[str, str]:
        out: dict[str, str] = {}
        with aws_call("ListTags", arn):
            for page in self.sm.get_paginator("list_tags").paginate(ResourceArn=arn):
                out.update({t["Key"]: t.get("Value", "") for t in page.get("Tags", [])})
        return out

    def quota_tags(self, quotas: tuple[ComputeQuota, ...],
                   known: MutableMapping[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
        """Tags of each quota by ComputeQuotaId (ListTags on its ARN; a quota without an ARN is skipped).
        `known`: tags already read, by ARN, and where new reads go. The one tag the planner reads does not change:
        ownership reads `aws:cloudformation:stack-name`, which CloudFormation sets when it
        creates the quota and nobody may edit (the `aws:` prefix is reserved), and an ARN names one quota for
        life. So a warm Lambda reads each quota's tags once, and a run lists tags only of quotas new to it."""
        known = {} if known is None else known
        out: dict[str, dict[str, str]] = {}
        for q in quotas:
            if not q.ComputeQuotaArn:
                continue
            if q.ComputeQuotaArn not in known:
                known[q.ComputeQuotaArn] = self.tags(q.ComputeQuotaArn)
            out[q.ComputeQuotaId] = known[q.ComputeQuotaArn]
        return out

    def quota_summaries(self, cluster_arn: str) -> list[dict[str, Any]]:
        """ListComputeQuotas, every page (at most 100 quotas a page): one call per hundred quotas."""
        out: list[dict[str, Any]] = []
        with aws_call("ListComputeQuotas", f"cluster {cluster_arn}"):
            pages = self.sm.get_paginator("list_compute_quotas").paginate(
                ClusterArn=cluster_arn, SortBy="Name", SortOrder="Ascending",
                PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                out += [s for s in page.get("ComputeQuotaSummaries", []) if s.get("Status") not in GONE_STATUSES]
        return out

    def quota_ids(self, cluster_arn: str) -> list[str]:
        return [s["ComputeQuotaId"] for s in self.quota_summaries(cluster_arn)]

    def quota(self, quota_id: str) -> ComputeQuota:
        with aws_call("DescribeComputeQuota", f"quota {quota_id}"):
            out = dict(self.sm.describe_compute_quota(ComputeQuotaId=quota_id))
        out.pop("ResponseMetadata", None)
        return load_model(ComputeQuota, out, f"DescribeComputeQuota {quota_id}")

    def quotas(self, cluster_arn: str) -> tuple[ComputeQuota, ...]:
        """Every live quota of the cluster, sorted by team. A summary carries what a plan reads (config, target,
        version, activation state); a quota is described only when its summary lacks one of them (the model makes
        ComputeQuotaVersion and ComputeQuotaConfig optional in a summary), so 1,000 quotas cost 10 calls, not 1,001."""
        quotas = [load_model(ComputeQuota, s, f"ListComputeQuotas {cluster_arn} ComputeQuotaSummaries")
                  if summary_is_complete(s) else self.quota(s["ComputeQuotaId"])
                  for s in self.quota_summaries(cluster_arn)]
        return tuple(sorted((q for q in quotas if q.Status not in GONE_STATUSES), key=lambda q: q.team))


# What a summary must hold to stand for a DescribeComputeQuota (what planning and apply read).
SUMMARY_FIELDS = ("ComputeQuotaId", "Name", "ComputeQuotaVersion", "Status", "ComputeQuotaTarget",
                  "ComputeQuotaConfig")


def summary_is_complete(summary: dict[str, Any]) -> bool:
    return all(summary.get(f) is not None for f in SUMMARY_FIELDS)


class SchedulerConfigReader:
    def __init__(self, sagemaker: Any):
        self.sm = sagemaker

    def describe(self, config_id: str) -> ClusterSchedulerConfig:
        with aws_call("DescribeClusterSchedulerConfig", f"scheduler config {config_id}"):
            out = dict(self.sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id))
        out.pop("ResponseMetadata", None)
        return load_model(ClusterSchedulerConfig, out, f"DescribeClusterSchedulerConfig {config_id}")

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
