"""Reading cluster, nodes and quotas from the emulator over HTTP, through every page."""

from __future__ import annotations

import pytest

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.errors import PermanentError
from rebalancer_tools.emulator.control import Emulator

P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"


def test_nodes_and_quotas_are_read_past_the_first_page(emu: Emulator, aws: AwsClients) -> None:
    arn = emu.create_cluster("big", [("p5", P5, 7), ("g5", G5, 6)])
    sm = aws.client("sagemaker")
    teams = [f"team-{i:02d}" for i in range(12)]
    for t in teams:
        sm.create_compute_quota(Name=f"{t}-quota", ClusterArn=arn, ComputeQuotaTarget={"TeamName": t},
                                ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": G5,
                                                                               "Accelerators": 2}]})
    reader = SageMakerReader(sm, page_size=5)
    cluster = reader.cluster("big")
    assert cluster.ClusterArn == arn
    nodes = reader.nodes("big")
    assert len(nodes) == 13
    assert len({n.InstanceId for n in nodes}) == 13
    quotas = reader.quotas(arn)
    assert [q.team for q in quotas] == teams
    assert all(q.ComputeQuotaVersion == 1 and q.Status == "Created" for q in quotas)
    assert quotas[0].ComputeQuotaConfig.ComputeQuotaResources[0].Accelerators == 2


def test_unknown_cluster_is_one_line(emu: Emulator, aws: AwsClients) -> None:
    with pytest.raises(PermanentError) as e:
        SageMakerReader(aws.client("sagemaker")).cluster("nope")
    assert str(e.value).startswith("DescribeCluster on cluster nope: ")
    assert "\n" not in str(e.value)
