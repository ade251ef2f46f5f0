"""Static checks of template.yaml and the state machine: lint clean, substitutions complete, least privilege."""

from __future__ import annotations

import importlib.util

import pytest
from support import template as t

ROOT = t.ROOT
FUNCTIONS = ("trigger", "collect", "plan", "apply", "verify", "rollback", "notify", "approval", "observe")


def test_every_placeholder_has_a_substitution_and_every_substitution_is_used() -> None:
    sm = t.resources("AWS::Serverless::StateMachine")["RebalanceStateMachine"]["Properties"]
    assert t.placeholders() == set(sm["DefinitionSubstitutions"])


def test_every_task_resource_is_a_substitution_or_a_service_integration() -> None:
    for name, state in t.asl()["States"].items():
        if state["Type"] != "Task":
            continue
        resource = state["Resource"]
        assert resource.startswith(("${", "arn:aws:states:::")), name
        if resource.startswith("arn:aws:states:::"):
            assert state["Parameters"]["FunctionName"].startswith("${"), name


def test_retries_name_transient_errors_only() -> None:
    for name, state in t.asl()["States"].items():
        for retry in state.get("Retry", []):
            for error in retry["ErrorEquals"]:
                assert error == "TransientError" or error.startswith("Lambda."), (name, error)


def test_every_state_after_apply_began_is_caught_into_rollback() -> None:
    states = t.asl()["States"]
    for name in ("Apply", "Verify"):
        catch = states[name]["Catch"]
        assert (catch[-1]["ErrorEquals"], catch[-1]["Next"]) == (["States.ALL"], "Rollback"), name
    assert states["Rollback"]["Next"] == "NotifyRolledBack"
    assert states[states["NotifyRolledBack"]["Next"]]["Type"] == "Fail"


def test_approval_waits_for_a_task_token_with_the_plans_timeout() -> None:
    state = t.asl()["States"]["RequestApproval"]
    assert state["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert state["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token"
    assert state["TimeoutSecondsPath"] == "$.plan.approval_timeout_seconds"
    assert [c["ErrorEquals"] for c in state["Catch"]][:2] == [["States.Timeout"], ["ApprovalRejected"]]


# Resources and actions of every statement: tests/unit/iam (AWS's authorization data).


def test_functions_and_handlers_match_the_template() -> None:
    fns = t.resources("AWS::Serverless::Function")
    assert {v["Properties"]["CodeUri"].strip("/").split("/")[-1] for v in fns.values()} == set(FUNCTIONS)
    glob = t.template()["Globals"]["Function"]
    assert (glob["Runtime"], glob["Architectures"], glob["Tracing"]) == ("python3.13", ["arm64"], "Active")
    for name in FUNCTIONS:
        assert (ROOT / "functions" / name / "app.py").is_file()


def test_powertools_settings_match_the_observability_module() -> None:
    from rebalancer.app import observability

    env = t.template()["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == observability.SERVICE
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == observability.NAMESPACE
    for alarm in t.resources("AWS::CloudWatch::Alarm").values():
        p = alarm["Properties"]
        if p.get("Namespace") == observability.NAMESPACE:
            assert p["Dimensions"] == [{"Name": "service", "Value": observability.SERVICE}]
        for m in p.get("Metrics", ()):  # a metric-math alarm's metrics
            metric = m.get("MetricStat", {}).get("Metric", {})
            if metric.get("Namespace") == observability.NAMESPACE:
                assert {"Name": "service", "Value": observability.SERVICE} in metric["Dimensions"]


def test_table_keys_and_ttl_match_the_table_layout() -> None:
    from rebalancer.adapters.dynamodb import table as store

    p = t.resources("AWS::DynamoDB::Table")["Table"]["Properties"]
    assert [k["AttributeName"] for k in p["KeySchema"]] == [store.KEY, store.SORT]
    assert p["TimeToLiveSpecification"] == {"AttributeName": store.TTL, "Enabled": True}
    assert p["BillingMode"] == "PAY_PER_REQUEST"
    assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_handler_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location(f"fn_{name}", ROOT / "functions" / name / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.handler)
