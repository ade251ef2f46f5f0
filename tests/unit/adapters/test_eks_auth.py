"""The EKS bearer token: a presigned STS GetCallerIdentity URL that signs the cluster-id header, valid 60 s."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
from moto import mock_aws

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.eks_auth import (
    api_client_for_eks,
    decode_token,
    eks_cluster_name_of,
    eks_token,
)
from rebalancer.errors import PermanentError


def test_token_is_a_presigned_get_caller_identity_for_the_cluster() -> None:
    token = eks_token(AwsClients(region="eu-west-1"), "ml-cluster-eks")
    assert token.startswith("k8s-aws-v1.")
    assert "=" not in token  # base64url without padding
    url = urlparse(decode_token(token))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert (url.scheme, url.netloc, url.path) == ("https", "sts.eu-west-1.amazonaws.com", "/")
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert query["X-Amz-Credential"].startswith("testing/")
    assert "/eu-west-1/sts/aws4_request" in query["X-Amz-Credential"]
    assert len(query["X-Amz-Signature"]) == 64


def test_tokens_for_two_clusters_differ_in_signature() -> None:
    clients = AwsClients(region="us-east-1")
    sig = [parse_qs(urlparse(decode_token(eks_token(clients, name))).query)["X-Amz-Signature"][0]
           for name in ("a", "b")]
    assert sig[0] != sig[1]


def test_eks_cluster_name_comes_from_the_orchestrator_arn() -> None:
    described = {"ClusterName": "hp", "Orchestrator": {"Eks": {
        "ClusterArn": "arn:aws:eks:us-east-1:123456789012:cluster/ml-eks"}}}
    assert eks_cluster_name_of(described) == "ml-eks"
    with pytest.raises(PermanentError, match="'slurm-one' has no EKS orchestrator"):
        eks_cluster_name_of({"ClusterName": "slurm-one", "Orchestrator": {"Slurm": {}}})


@mock_aws
def test_client_is_configured_from_eks_describe_cluster() -> None:
    eks = boto3.client("eks", region_name="us-east-1")
    eks.create_cluster(name="ml-eks", roleArn="arn:aws:iam::123456789012:role/eks",
                       resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    described = eks.describe_cluster(name="ml-eks")["cluster"]
    api = api_client_for_eks(AwsClients(region="us-east-1"), "ml-eks")
    conf = api.configuration
    assert conf.host == described["endpoint"]
    assert Path(conf.ssl_ca_cert).read_bytes() == base64.b64decode(
        described["certificateAuthority"]["data"])
    assert conf.get_api_key_with_prefix("BearerToken").startswith("Bearer k8s-aws-v1.")


@mock_aws
def test_unknown_eks_cluster_is_one_line() -> None:
    with pytest.raises(PermanentError, match=r"^eks:DescribeCluster on EKS cluster nope: ResourceNotFoundException"):
        api_client_for_eks(AwsClients(region="us-east-1"), "nope")
