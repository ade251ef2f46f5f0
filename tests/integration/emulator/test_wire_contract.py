"""What crosses the wire: error codes the SDK model declares for each operation, and optimistic concurrency
under parallel writers — over HTTP on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, http_emulator

from rebalancer_tools.packaging.sdk_model import sagemaker_model

UNKNOWN = "000000000000"
P5 = "ml.p5.48xlarge"


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with http_emulator(seed_demo=True) as handle:
        yield handle


def _research(emu: EmulatorHandle) -> str:
    assert emu.demo is not None
    return emu.demo.quota_ids["research"]


def _arn(emu: EmulatorHandle) -> str:
    assert emu.demo is not None
    return emu.demo.cluster_arn


Call = Callable[[Any, EmulatorHandle], Any]
CASES: list[tuple[str, str, Call]] = [
    ("DescribeComputeQuota", "ResourceNotFound", lambda sm, _: sm.describe_compute_quota(ComputeQuotaId=UNKNOWN)),
    ("UpdateComputeQuota", "ResourceNotFound",
     lambda sm, _: sm.update_compute_quota(ComputeQuotaId=UNKNOWN, TargetVersion=1, ActivationState="Enabled")),
    ("UpdateComputeQuota", "ConflictException",
     lambda sm, e: sm.update_compute_quota(ComputeQuotaId=_research(e), TargetVersion=7, ActivationState="Enabled")),
    ("DeleteComputeQuota", "ResourceNotFound", lambda sm, _: sm.delete_compute_quota(ComputeQuotaId=UNKNOWN)),
    ("CreateComputeQuota", "ConflictException",
     lambda sm, e: sm.create_compute_quota(Name="research-quota", ClusterArn=_arn(e),
                                           ComputeQuotaTarget={"TeamName": "fresh"},
                                           ComputeQuotaConfig={"ComputeQuotaResources": [
                                               {"InstanceType": P5, "Accelerators": 1}]})),
    ("DescribeClusterSchedulerConfig", "ResourceNotFound",
     lambda sm, _: sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=UNKNOWN)),
    ("UpdateClusterSchedulerConfig", "ResourceNotFound",
     lambda sm, _: sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=UNKNOWN, TargetVersion=1)),
    ("DeleteClusterSchedulerConfig", "ResourceNotFound",
     lambda sm, _: sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=UNKNOWN)),
    ("DescribeCluster", "ResourceNotFound", lambda sm, _: sm.describe_cluster(ClusterName="nope")),
    ("ListClusterNodes", "ResourceNotFound", lambda sm, _: sm.list_cluster_nodes(ClusterName="nope")),
]


@pytest.mark.parametrize(("operation", "code", "call"), CASES, ids=[f"{o}-{c}" for o, c, _ in CASES])
def test_errors_are_shapes_the_model_declares(emu: EmulatorHandle, operation: str, code: str, call: Call) -> None:
    declared = {s.name for s in sagemaker_model().operation_model(operation).error_shapes}
    assert code in declared
    sm = emu.sagemaker
    with pytest.raises(getattr(sm.exceptions, code)) as exc:
        call(sm, emu)
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert exc.value.response["Error"]["Message"]


def test_parallel_writers_with_the_same_version_exactly_one_wins(emu: EmulatorHandle) -> None:
    qid = _research(emu)
    sm = emu.client(max_attempts=1)

    def write(amount: int) -> str:
        try:
            sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=1, ComputeQuotaConfig={
                "ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": amount}]})
            return "ok"
        except ClientError as e:
            return str(e.response["Error"]["Code"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(write, range(1, 9)))
    assert sorted(outcomes) == ["ConflictException"] * 7 + ["ok"]
    got = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert got["ComputeQuotaVersion"] == 2
