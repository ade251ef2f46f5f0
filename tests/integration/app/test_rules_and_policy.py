"""The template's EventBridge rules against the sample events (moto's pattern matcher, as DESIGN.md suggests:
moto's EventBridge delivers only to SQS), and the policy read from SSM through Powertools Parameters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws
from moto.events.models import EventPattern
from support.events import load_event
from support.template import resources

from rebalancer.app.policy_source import load_policy
from rebalancer.errors import InvalidInput

MANAGED = ["ml-cluster"]
STACK = "rebalancer"


def _resolve(node: Any, with_extra_prefix: bool) -> Any:
    """Fill the template's intrinsics the way CloudFormation would for this test's parameters."""
    if isinstance(node, dict):
        if "!Ref" in node:
            return {"ClusterNames": MANAGED, "ExtraAlarmNamePrefix": "team-alarms-", "AWS::NoValue": None,
                    "RebalanceStateMachine": load_event("stepfunctions-execution-finished")["detail"][
                        "stateMachineArn"]}[node["!Ref"]]
        if "!Sub" in node:
            return str(node["!Sub"]).replace("${AWS::StackName}", STACK)
        if "!If" in node:
            _cond, yes, no = node["!If"]
            return _resolve(yes if with_extra_prefix else no, with_extra_prefix)
        return {k: _resolve(v, with_extra_prefix) for k, v in node.items()}
    if isinstance(node, list):
        return [x for x in (_resolve(v, with_extra_prefix) for v in node) if x is not None]
    return node


def rule(name: str, *, with_extra_prefix: bool = False) -> EventPattern:
    pattern = resources()["TriggerFunction"]["Properties"]["Events"][name]["Properties"]["Pattern"]
    return EventPattern.load(json.dumps(_resolve(pattern, with_extra_prefix)))


def matching_rules(event: dict[str, Any], **kwargs: bool) -> list[str]:
    return [n for n in ("HyperPodClusterChange", "HyperPodClusterEvent", "UtilizationAlarm", "RunFinished")
            if rule(n, **kwargs).matches_event(event)]


@pytest.mark.parametrize(("sample", "expected"), [
    ("hyperpod-cluster-state-change", ["HyperPodClusterChange"]),
    ("hyperpod-node-health", ["HyperPodClusterChange"]),
    ("hyperpod-cluster-event", ["HyperPodClusterEvent"]),
])
def test_each_hyperpod_event_of_a_managed_cluster_matches_exactly_one_rule(sample: str, expected: list[str]) -> None:
    assert matching_rules(load_event(sample)) == expected


def test_only_our_state_machine_ending_matches_the_follow_up_rule() -> None:
    ended = load_event("stepfunctions-execution-finished")
    assert matching_rules(ended) == ["RunFinished"]
    running = load_event("stepfunctions-execution-finished")
    running["detail"]["status"] = "RUNNING"
    other = load_event("stepfunctions-execution-finished")
    other["detail"]["stateMachineArn"] += "-other"
    assert matching_rules(running) == matching_rules(other) == []


def test_events_of_other_clusters_do_not_match() -> None:
    for sample, path in (("hyperpod-node-health", ("detail",)), ("hyperpod-cluster-event", ("detail", "EventDetails"))):
        event = load_event(sample)
        target = event
        for key in path:
            target = target[key]
        target["ClusterName"] = "someone-else"
        assert matching_rules(event) == [], sample


def test_only_our_alarms_entering_alarm_match() -> None:
    ours = load_event("alarm-state-change")
    assert matching_rules(ours) == ["UtilizationAlarm"]
    ok = load_event("alarm-state-change")
    ok["detail"]["state"]["value"] = "OK"
    assert matching_rules(ok) == []
    foreign = load_event("alarm-state-change")
    foreign["detail"]["alarmName"] = "team-alarms-gpu-idle"
    assert matching_rules(foreign) == []
    assert matching_rules(foreign, with_extra_prefix=True) == ["UtilizationAlarm"]


def test_the_alarm_sample_is_named_like_the_templates_alarms() -> None:
    names = [r["Properties"]["AlarmName"]["!Sub"].replace("${AWS::StackName}", STACK)
             for r in resources("AWS::CloudWatch::Alarm").values()]
    assert load_event("alarm-state-change")["detail"]["alarmName"] in names


@pytest.fixture
def ssm() -> Iterator[Any]:
    with mock_aws():
        parameters.clear_caches()  # type: ignore[no-untyped-call]
        yield boto3.client("ssm")
        parameters.clear_caches()  # type: ignore[no-untyped-call]


def test_a_valid_policy_loads_from_ssm(ssm: Any) -> None:
    ssm.put_parameter(Name="/p/c1", Type="String", Value="mode: approve\nteams:\n  research: {weight: 3}\n")
    policy = load_policy("/p/c1")
    assert policy.mode == "approve"
    assert policy.teams["research"].weight == 3


@pytest.mark.parametrize(("value", "field", "text"), [
    ("teams:\n  Research: {weight: 1}\n", "teams", "would be rejected by HyperPod"),
    ("mode: sometimes\nteams: {}\n", "mode", "sometimes"),
    ("teams: [\n", None, "not valid YAML/JSON"),
])
def test_an_invalid_policy_names_the_parameter_and_the_field(ssm: Any, value: str, field: str | None,
                                                             text: str) -> None:
    ssm.put_parameter(Name="/p/c1", Type="String", Value=value)
    with pytest.raises(InvalidInput) as e:
        load_policy("/p/c1")
    assert str(e.value).startswith("ssm:/p/c1: ")
    assert e.value.field == field
    assert text in str(e.value)


def test_a_missing_policy_parameter_is_a_clear_error(ssm: Any) -> None:
    with pytest.raises(InvalidInput, match=r"^ssm:/p/absent: cannot read the policy parameter"):
        load_policy("/p/absent")
