"""One SDK version: the layer ships the boto3 / botocore that the development venv (and so every test) runs, and
that botocore has every operation, parameter and response field the package uses.

requirements/sam.lock is the exception: aws-sam-cli pins its own boto3 exactly (`boto3[crt]==` in its metadata) and
the SAM venv only builds the layer; the layer's SDK comes from layers/core/requirements.txt."""

from __future__ import annotations

import ast
import importlib.metadata
import re
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name
from support.template import ROOT

from rebalancer.domain import quotas
from rebalancer.domain import snapshot as models

SDK = ("boto3", "botocore", "s3transfer", "jmespath")
PACKAGE = ROOT / "layers" / "core" / "rebalancer"
SERVICES = ("sagemaker", "stepfunctions", "dynamodb", "sns", "ssm", "secretsmanager", "cloudwatch", "sts", "eks")
# Calls whose names happen to be operation names but are not SDK calls.
NOT_SDK = {("policy_source.py", "get_parameter"),  # Powertools' parameters utility (max_age=)
           ("approval_http.py", "search")}  # re.search


def pins(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;#]+)", line.strip())
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(3)
    return out


def test_the_layer_and_the_dev_venv_pin_the_same_sdk() -> None:
    layer, dev = pins(ROOT / "layers/core/requirements.txt"), pins(ROOT / "requirements/dev.lock")
    assert {p: layer.get(p) for p in SDK} == {p: dev.get(p) for p in SDK}
    assert all(layer.get(p) for p in SDK), layer


def test_the_tests_run_the_layers_sdk() -> None:
    layer = pins(ROOT / "layers/core/requirements.txt")
    assert {p: importlib.metadata.version(p) for p in SDK} == {p: layer[p] for p in SDK}


def test_the_sam_venv_is_the_documented_exception() -> None:
    sam = pins(ROOT / "requirements/sam.lock")
    assert "aws-sam-cli" in sam
    assert "pins its own boto3" in (ROOT / "requirements/sam.lock").read_text()


@cache
def _session() -> botocore.session.Session:
    return botocore.session.get_session()


@cache
def _operations() -> dict[str, list[tuple[str, str]]]:
    session = _session()
    out: dict[str, list[tuple[str, str]]] = {}
    for service in SERVICES:
        for op in session.get_service_model(service).operation_names:
            out.setdefault(xform_name(op), []).append((service, op))
    return out


@cache
def _sdk_calls() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(file, operation or paginator name, keyword arguments) of every SDK call in the package's source (parsed once,
    for the parametrization and the test of the scan)."""
    ops = _operations()
    calls = []
    for f in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            if name == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant):
                calls.append((f.name, f"paginator:{node.args[0].value}", ()))
            elif name in ops and (f.name, name) not in NOT_SDK:
                calls.append((f.name, name, tuple(k.arg for k in node.keywords if k.arg)))
    return tuple(calls)


def test_the_scan_sees_the_calls_we_know_of() -> None:
    names = {name for _, name, _ in _sdk_calls()}
    assert {"describe_cluster", "describe_compute_quota", "create_compute_quota", "update_compute_quota",
            "delete_compute_quota", "paginator:list_cluster_nodes", "paginator:list_compute_quotas",
            "create_cluster_scheduler_config", "update_cluster_scheduler_config", "start_execution",
            "get_metric_data", "publish", "put_item"} <= names


def _paginates(session: botocore.session.Session, service: str, operation: str) -> bool:
    try:
        session.get_paginator_model(service).get_paginator(operation)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("where", "name", "keywords"), _sdk_calls())
def test_every_call_is_an_operation_of_the_layers_botocore_with_those_parameters(
        where: str, name: str, keywords: tuple[str, ...]) -> None:
    session = _session()
    if name.startswith("paginator:"):
        op = name.removeprefix("paginator:")
        assert any(_paginates(session, s, op_name) for s, op_name in _operations().get(op, [])), \
            f"{where}: no paginator {op}"
        return
    candidates = _operations()[name]
    members = [set(session.get_service_model(s).operation_model(o).input_shape.members) for s, o in candidates]
    assert any(set(keywords) <= m for m in members), f"{where}: {name}({', '.join(keywords)}) not in {candidates}"


# The snapshot's AWS shapes: every field they declare is a member of botocore's shape of that name.
SHAPES = [
    (models.Cluster, "DescribeClusterResponse"), (models.InstanceGroup, "ClusterInstanceGroupDetails"),
    (models.InstanceTypeDetail, "ClusterInstanceTypeDetail"), (models.ClusterNode, "ClusterNodeSummary"),
    (models.NodeStatus, "ClusterInstanceStatusDetails"), (quotas.ComputeQuota, "DescribeComputeQuotaResponse"),
    (quotas.QuotaConfig, "ComputeQuotaConfig"), (quotas.ComputeQuotaResource, "ComputeQuotaResourceConfig"),
    (quotas.SharingConfig, "ResourceSharingConfig"), (quotas.QuotaTarget, "ComputeQuotaTarget"),
    (quotas.AcceleratorPartitionConfig, "AcceleratorPartitionConfig"),
    (quotas.ClusterSchedulerConfig, "DescribeClusterSchedulerConfigResponse"),
    (models.ClusterAutoScaling, "ClusterAutoScalingConfigOutput"),
    (models.ClusterCapacityRequirements, "ClusterCapacityRequirements"),
    (models.TrainingPlan, "DescribeTrainingPlanResponse"),
]


@pytest.mark.parametrize(("model", "shape"), SHAPES, ids=[s for _, s in SHAPES])
def test_every_field_the_snapshot_reads_is_in_the_layers_botocore(model: type[models.AwsShape], shape: str) -> None:
    members = set(_session().get_service_model("sagemaker").shape_for(shape).members)
    assert set(model.model_fields) <= members, set(model.model_fields) - members
