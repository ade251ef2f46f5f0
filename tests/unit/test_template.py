"""Static checks of template.yaml and the state machine: lint clean, substitutions complete, least privilege."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import template as t

ROOT = t.ROOT
FUNCTIONS = ("trigger", "collect", "plan", "apply", "verify", "rollback", "notify", "approval", "observe")
SAM_VENV = ROOT / ".venv-sam"
BIN = Path(sys.executable).parent


def test_cfn_lint_is_clean() -> None:
    proc = subprocess.run([str(BIN / "cfn-lint"), str(t.TEMPLATE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _fake_arns() -> dict[str, str]:
    values = {name: f"arn:aws:lambda:us-east-1:123456789012:function:{fn}"
              for name, fn in t.function_of_substitution().items()}
    values["ApprovalApiUrl"] = "https://abc123.execute-api.us-east-1.amazonaws.com"
    return values


def test_statelint_is_clean_on_the_substituted_asl(tmp_path: Path) -> None:
    path = tmp_path / "rebalance.asl.json"
    path.write_text(t.substituted_asl(_fake_arns()))
    proc = subprocess.run([str(BIN / "statelint"), str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


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


def _statements(node: Any) -> list[dict[str, Any]]:
    """Every IAM statement anywhere in the template (inline policies, SAM policy statements, queue policies)."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if "Effect" in node and "Action" in node:
            found.append(node)
        for value in node.values():
            found += _statements(value)
    elif isinstance(node, list):
        for value in node:
            found += _statements(value)
    return found


# Actions that AWS documents as supporting no resource-level scope, so "*" is the only valid Resource.
UNSCOPED_ACTIONS = {
    "sagemaker:ListComputeQuotas", "sagemaker:ListClusterSchedulerConfigs", "cloudwatch:GetMetricData",
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
    "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
}


def test_no_statement_grants_star_actions_and_star_resources_only_where_aws_requires_it() -> None:
    statements = _statements(t.template()["Resources"])
    assert len(statements) >= 8
    for s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        for a in actions:
            assert isinstance(a, str), s
            assert "*" not in a, s
        if s.get("Resource") == "*":
            assert set(actions) <= UNSCOPED_ACTIONS, s


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
        if p["Namespace"] == observability.NAMESPACE:
            assert p["Dimensions"] == [{"Name": "service", "Value": observability.SERVICE}]


def test_table_keys_and_ttl_match_the_store() -> None:
    from rebalancer.app import store

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


def _sam() -> Path:
    sam = SAM_VENV / "bin" / "sam"
    if not sam.exists():
        pytest.skip(f"{sam} is absent: run `make sam-venv` (about 75 s) to run the sam-based checks")
    return sam


def _sam_env() -> dict[str, str]:
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    python = subprocess.run([str(ROOT / "scripts" / "find-python"), "13"], capture_output=True, text=True,
                            check=True).stdout.strip()
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env['PATH']}"
    return env


def test_sam_validate_lint() -> None:
    sam = _sam()
    proc = subprocess.run([str(sam), "validate", "--lint", "-t", str(t.TEMPLATE)], capture_output=True, text=True,
                          check=False, env=_sam_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_sam_build_and_the_built_handlers_import(tmp_path: Path) -> None:
    sam = _sam()
    build = tmp_path / "build"
    proc = subprocess.run([str(sam), "build", "-t", str(t.TEMPLATE), "-b", str(build)], capture_output=True,
                          text=True, check=False, env=_sam_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    layer = build / "CoreLayer" / "python"
    assert (layer / "rebalancer" / "app" / "__init__.py").is_file()
    assert (layer / "aws_lambda_powertools").is_dir()
    for logical in ("TriggerFunction", "ApprovalFunction"):
        assert (build / logical / "app.py").is_file()
    # The layer's compiled wheels are for aarch64, so import our own package from the build with this machine's
    # dependencies: only `rebalancer` comes from the layer; -S keeps the editable install out of the way.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "rebalancer").symlink_to(layer / "rebalancer")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    code = (f"import sys; sys.path[:0] = [{str(pkg)!r}, {site!r}, {str(build / 'TriggerFunction')!r}]; "
            "import rebalancer.app.trigger, app; print(rebalancer.__file__, app.handler)")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(pkg) in proc.stdout
