"""A policy read that fails transiently (throttled past the SDK's retries) is not a bad policy: the plan step raises
it as TransientError for the state machine's Retry, writes no invalid-policy audit record, and the plan handler
counts it in the metric that the plan-errors alarm (the one AppConfig's deployment watches) subtracts from Lambda's
Errors, so it never rolls back a valid policy. A bad policy still does all three."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.clock import T0, ticking
from support.clusters import snapshot
from support.template import template

from rebalancer.app.observability import NAMESPACE, TRANSIENT_FAILURES, transient_failures_counted
from rebalancer.app.workflow import state
from rebalancer.app.workflow.state import RunRef
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, RebalancerError, TransientError
from rebalancer_tools.fakes.memory_store import MemoryStore

RUN = RunRef(cluster_name="test", execution_name="test-0001",
             execution_arn="arn:aws:states:us-east-1:123456789012:execution:rebalance:test-0001")


def planned_with(error: RebalancerError) -> tuple[MemoryStore, list[dict[str, Any]]]:
    """The plan step of RUN under the plan handler's counting, with a policy read that raises `error`; the audit
    records and the metrics it emitted."""
    store = MemoryStore(now=ticking())
    state.record_snapshot(store.artifacts, RUN, snapshot({"ml.p5.48xlarge": 2}, taken_at=T0))

    def load_policy(_cluster: str) -> Policy:
        raise error

    with pytest.raises(type(error)), transient_failures_counted("plan"):
        plan(RUN, store=store, load_policy=load_policy, now=T0)
    return store, store.audit.records("test")


def emitted(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]


def test_a_throttled_policy_read_is_transient_not_an_invalid_policy(capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", template()["Globals"]["Function"]["Environment"]["Variables"][
        "POWERTOOLS_SERVICE_NAME"])
    _store, records = planned_with(TransientError("appconfigdata:GetLatestConfiguration on appconfig:a/e/p: "
                                                  "ThrottlingException: Rate exceeded"))
    assert [r["outcome"] for r in records] == []
    [metric] = emitted(capsys)
    assert metric[TRANSIENT_FAILURES] == [1.0]
    assert metric["Step"] == "plan"
    alarm = template()["Resources"]["PolicyPlanErrorsAlarm"]["Properties"]
    [transient] = [m for m in alarm["Metrics"] if m["Id"] == "transient"]
    watched = transient["MetricStat"]["Metric"]
    assert (watched["Namespace"], watched["MetricName"]) == (NAMESPACE, TRANSIENT_FAILURES)
    [[*dimensions]] = metric["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert {d["Name"]: d["Value"] for d in watched["Dimensions"]} == {d: metric[d] for d in dimensions}


def test_a_bad_policy_is_recorded_and_counts_for_the_rollback_alarm(capsys: pytest.CaptureFixture[str]) -> None:
    _store, records = planned_with(InvalidInput("teams.a.weight: must be >= 0", source="ssm:/p/test"))
    assert [(r["kind"], r["outcome"]) for r in records] == [("plan", "invalid-policy")]
    assert emitted(capsys) == []  # Lambda's Errors counts it, nothing subtracts it


def test_the_rollback_alarm_is_lambda_errors_less_the_transient_ones() -> None:
    """What AppConfig's environment monitors: errors − transient ≥ 1 in a minute, so a throttled run (one error,
    one transient each attempt) stays below the threshold and a bad policy (one error) reaches it."""
    resources = template()["Resources"]
    [monitor] = resources["PolicyEnvironment"]["Properties"]["Monitors"]
    alarm = resources["PolicyPlanErrorsAlarm"]["Properties"]
    assert monitor["AlarmArn"]["!Sub"].endswith(f":alarm:{alarm['AlarmName']['!Sub']}")
    by_id = {m["Id"]: m for m in alarm["Metrics"]}
    assert by_id["errors"]["MetricStat"]["Metric"]["MetricName"] == "Errors"
    assert by_id["errors"]["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "FunctionName",
                                                                      "Value": {"!Ref": "PlanFunction"}}]
    [shown] = [m for m in alarm["Metrics"] if m.get("ReturnData", True)]
    assert shown["Expression"] == "errors - FILL(transient, 0)"
    assert {m["MetricStat"]["Period"] for m in by_id.values() if "MetricStat" in m} == {60}
    assert {m["MetricStat"]["Stat"] for m in by_id.values() if "MetricStat" in m} == {"Sum"}
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
