"""What `rebalancer doctor` simulates for the quota writers' update and delete grants: CloudFormation's handler
permissions for AWS::SageMaker::ComputeQuota update (eks:AssociateAccessPolicy, eks:DisassociateAccessPolicy,
eks:DescribeAccessEntry, eks:ListAssociatedAccessPolicies, eks:DescribeCluster, sagemaker:DescribeCluster) and delete
(eks:DisassociateAccessPolicy, eks:DescribeAccessEntry), narrowed as template.yaml grants them, each on the resource
IAM checks; the quota actions themselves are the functions' own calls."""

from __future__ import annotations

import pytest

from rebalancer.adapters import prerequisites as pre

WHERE = {"partition": "aws", "region": "eu-west-1", "account": "111122223333"}
ENTRY = "arn:aws:eks:eu-west-1:111122223333:access-entry/hp-eks/role/111122223333/x/x"


def actions(function: str) -> set[str]:
    return {a for a, _ in pre.update_delete_calls(function, **WHERE, eks_cluster="hp-eks")}


def test_apply_updates_with_the_eks_access_of_its_creates_and_reads_the_access_entry() -> None:
    assert actions("apply") == {"sagemaker:DescribeCluster", "eks:DescribeCluster",
                                "eks:AssociateAccessPolicy", "eks:ListAssociatedAccessPolicies",
                                "eks:DescribeAccessEntry"}


def test_rollback_updates_and_deletes_and_takes_the_access_policy_back() -> None:
    assert actions("rollback") == {"sagemaker:DescribeCluster", "eks:DescribeCluster",
                                   "eks:DisassociateAccessPolicy", "eks:DescribeAccessEntry",
                                   "eks:ListAssociatedAccessPolicies"}


def test_with_the_functions_own_calls_they_cover_every_action_of_cloudformations_update_and_delete_handlers(
        ) -> None:
    own = {a for f in ("apply", "rollback") for a, _ in pre.FUNCTION_CALLS[f]
           if a in ("sagemaker:UpdateComputeQuota", "sagemaker:DeleteComputeQuota")}
    assert actions("apply") | actions("rollback") | own == {
        "eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:DescribeAccessEntry",
        "eks:ListAssociatedAccessPolicies", "eks:DescribeCluster", "sagemaker:DescribeCluster",
        "sagemaker:UpdateComputeQuota", "sagemaker:DeleteComputeQuota"}


@pytest.mark.parametrize("function", ["trigger", "collect", "plan", "verify", "notify", "approval", "observe"])
def test_functions_that_write_no_quota_have_none(function: str) -> None:
    assert pre.update_delete_calls(function, **WHERE, eks_cluster="hp-eks") == []


def test_each_is_checked_on_the_resource_iam_authorizes_it_on() -> None:
    calls = dict(pre.update_delete_calls("rollback", **WHERE, eks_cluster="hp-eks"))
    assert calls["eks:DisassociateAccessPolicy"] == calls["eks:DescribeAccessEntry"] == ENTRY
    assert calls["eks:DescribeCluster"] == "arn:aws:eks:eu-west-1:111122223333:cluster/hp-eks"
    assert calls["sagemaker:DescribeCluster"] == "arn:aws:sagemaker:eu-west-1:111122223333:cluster/x"
    unknown = dict(pre.update_delete_calls("rollback", **WHERE, eks_cluster=None))
    assert unknown["eks:DescribeCluster"].endswith(":cluster/x")
