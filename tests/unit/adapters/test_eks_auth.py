"""The EKS bearer token: a presigned STS GetCallerIdentity URL that signs the cluster-id header, valid 60 s. The
client built from eks:DescribeCluster is tested against moto in tests/integration/adapters/test_eks_client.py."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.kubernetes.eks_auth import decode_token, eks_cluster_name_of, eks_token
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
