"""The Kubernetes client for an EKS cluster: endpoint, CA and bearer token from eks:DescribeCluster (moto's EKS), and
an unknown cluster refused in one line."""

from __future__ import annotations

import base64
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.kubernetes.eks_auth import api_client_for_eks
from rebalancer.errors import PermanentError


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
