"""Collect at scale: quotas come from ListComputeQuotas summaries (100 a page), DescribeComputeQuota only for a
summary that lacks a field the plan reads, and each quota's tags once per warm process."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from support.emulator import in_process_emulator

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer_tools.emulator.resources import Resource

NOW = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
P5 = "ml.p5.48xlarge"


def _seed(handle: Any, teams: int) -> str:
    arn = handle.emulator.create_cluster("big", [("p5", P5, teams)])
    sm = handle.sagemaker
    for i in range(teams):
        sm.create_compute_quota(Name=f"t{i:03}-quota", ClusterArn=arn, ComputeQuotaTarget={"TeamName": f"t{i:03}"},
                                ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": 8}]})
    handle.emulator.settle()
    return arn


def _counting(clients: AwsClients) -> Counter[str]:
    calls: Counter[str] = Counter()
    clients.client("sagemaker").meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
    return calls


def test_quotas_cost_one_call_per_hundred_and_tags_are_read_once_per_process() -> None:
    with in_process_emulator() as handle:
        _seed(handle, 250)
        clients = AwsClients(region="us-east-1")
        calls = _counting(clients)
        seen: dict[str, dict[str, str]] = {}
        none = KubeAccess(mode="none")
        first = collect_snapshot("big", clients, now=NOW, kube=none, metrics_window=None, known_tags=seen)
        first_calls = dict(calls)
        calls.clear()
        second = collect_snapshot("big", clients, now=NOW, kube=none, metrics_window=None, known_tags=seen)
    assert len(first.snapshot.quotas) == 250
    assert first_calls["ListComputeQuotas"] == 3  # ceil(250 / 100) pages
    assert "DescribeComputeQuota" not in first_calls
    assert first_calls["ListTags"] == 250
    assert "ListTags" not in calls
    assert calls["ListComputeQuotas"] == 3
    assert second.snapshot.quotas == first.snapshot.quotas
    assert second.snapshot.quota_tags == first.snapshot.quota_tags


def test_a_summary_without_its_version_is_described(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Resource.summary

    def lacking(self: Resource) -> dict[str, Any]:
        out = real(self)
        if self.name == "t001-quota":
            out.pop("ComputeQuotaVersion")
        return out

    monkeypatch.setattr(Resource, "summary", lacking)
    with in_process_emulator() as handle:
        arn = _seed(handle, 3)
        sm = handle.client()
        calls: Counter[str] = Counter()
        sm.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
        quotas = SageMakerReader(sm).quotas(arn)
    assert [q.team for q in quotas] == ["t000", "t001", "t002"]
    assert quotas[1].ComputeQuotaVersion == 1
    assert calls == {"ListComputeQuotas": 1, "DescribeComputeQuota": 1}


def test_quotas_read_from_summaries_equal_what_describe_returns() -> None:
    with in_process_emulator() as handle:
        arn = _seed(handle, 5)
        sm = handle.client()
        reader = SageMakerReader(sm, page_size=2)
        from_summaries = reader.quotas(arn)
        described = tuple(sorted((reader.quota(i) for i in reader.quota_ids(arn)), key=lambda q: q.team))
    assert [q.model_dump(exclude={"Description"}) for q in from_summaries] == \
        [q.model_dump(exclude={"Description"}) for q in described]
