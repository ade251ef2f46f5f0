"""The resource ARNs the emulator authorizes each request on, and the intrinsic-function resolver the IAM checks
read template.yaml with."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancer_tools.iam import policies
from rebalancer_tools.iam.requests import UnknownOperation, Where, authorized

CLUSTER = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123"
WHERE = Where("us-east-1", "111122223333", cluster_arn=lambda ref: CLUSTER if ref in ("c1", CLUSTER) else None,
              eks_cluster_of=lambda arn: "ml-eks" if arn == CLUSTER else None,
              secret_arn=lambda ref: f"arn:aws:secretsmanager:us-east-1:111122223333:secret:{ref}-AbCdEf")
ARN = "arn:aws:{}:us-east-1:111122223333:{}"


@pytest.mark.parametrize(("service", "operation", "params", "pairs"), [
    ("dynamodb", "PutItem", {"TableName": "t"}, [("dynamodb:PutItem", ARN.format("dynamodb", "table/t"))]),
    ("dynamodb", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "t"}},
                                                          {"ConditionCheck": {"TableName": "u"}}]},
     [("dynamodb:PutItem", ARN.format("dynamodb", "table/t")),
      ("dynamodb:ConditionCheckItem", ARN.format("dynamodb", "table/u"))]),
    ("ssm", "GetParameter", {"Name": "/p/c1"}, [("ssm:GetParameter", ARN.format("ssm", "parameter/p/c1"))]),
    ("secretsmanager", "GetSecretValue", {"SecretId": "slack"},
     [("secretsmanager:GetSecretValue", ARN.format("secretsmanager", "secret:slack-AbCdEf"))]),
    ("stepfunctions", "StartExecution", {"stateMachineArn": ARN.format("states", "stateMachine:m")},
     [("states:StartExecution", ARN.format("states", "stateMachine:m"))]),
    ("states", "SendTaskSuccess", {"taskToken": "t"}, [("states:SendTaskSuccess", "*")]),
    ("sagemaker", "DescribeCluster", {"ClusterName": "c1"}, [("sagemaker:DescribeCluster", CLUSTER)]),
    ("sagemaker", "UpdateComputeQuota", {"ComputeQuotaId": "q1"},
     [("sagemaker:UpdateComputeQuota", ARN.format("sagemaker", "compute-quota/q1"))]),
    ("sagemaker", "ListComputeQuotas", {"ClusterArn": CLUSTER}, [("sagemaker:ListComputeQuotas", "*")]),
    ("eks", "DescribeAddon", {"name": "ml-eks", "addonName": "a"},
     [("eks:DescribeAddon", ARN.format("eks", "addon/ml-eks/a/uuid"))]),
    ("cloudwatch", "GetMetricData", {}, [("cloudwatch:GetMetricData", "*")]),
])
def test_each_request_is_authorized_on_the_resources_aws_checks(service: str, operation: str,
                                                                 params: dict[str, Any], pairs: list[Any]) -> None:
    assert authorized(service, operation, params, WHERE) == pairs


def test_a_create_needs_the_cluster_the_new_resource_and_its_dependent_actions() -> None:
    got = authorized("sagemaker", "CreateComputeQuota", {"ClusterArn": CLUSTER, "Name": "q"}, WHERE)
    new = ARN.format("sagemaker", "compute-quota/(new)")
    entry = ARN.format("eks", "access-entry/ml-eks/role/111122223333/hyperpod-task-governance/uuid")
    assert got == [("sagemaker:CreateComputeQuota", CLUSTER), ("sagemaker:CreateComputeQuota", new),
                   ("sagemaker:AddTags", new), ("sagemaker:DescribeCluster", CLUSTER),
                   ("eks:DescribeCluster", ARN.format("eks", "cluster/ml-eks")),
                   ("eks:AssociateAccessPolicy", entry), ("eks:ListAssociatedAccessPolicies", entry)]


def test_an_operation_without_a_rule_is_an_error_naming_it() -> None:
    with pytest.raises(UnknownOperation, match="sagemaker:CreateTrainingJob"):
        authorized("sagemaker", "CreateTrainingJob", {"TrainingJobName": "j"}, WHERE)


def test_the_resolver_handles_the_intrinsics_the_template_uses() -> None:
    resolve = policies.Resolver({"AWS::Region": "r", "T": "t", "T.Arn": "arn:t", "P": "/p"}, {"Yes": True,
                                                                                              "No": False})
    node = {"a": {"!Sub": "x:${AWS::Region}:${T}"}, "b": {"Fn::Sub": ["${v}/*", {"v": {"Ref": "P"}}]},
            "c": {"!GetAtt": "T.Arn"}, "d": {"!Join": [",", ["1", {"!Ref": "T"}]]},
            "e": [{"!If": ["No", "x", {"Ref": "AWS::NoValue"}]}, {"!If": ["Yes", "y", "z"]}]}
    assert resolve(node) == {"a": "x:r:t", "b": "/p/*", "c": "arn:t", "d": "1,t", "e": ["y"]}
    with pytest.raises(KeyError, match="Missing"):
        resolve({"!Ref": "Missing"})
