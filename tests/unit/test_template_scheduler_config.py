"""The template grants the scheduler-config calls to exactly the roles that make them, scoped to the account's
cluster scheduler configs (ListClusterSchedulerConfigs, like ListComputeQuotas, takes no resource scope)."""

from __future__ import annotations

from typing import Any

from support import template as t

SCHEDULER = "sagemaker:{}ClusterSchedulerConfig"
WRITES = {SCHEDULER.format(v) for v in ("Create", "Update", "Delete")}


def _actions_by_resource(node: Any) -> list[tuple[set[str], str]]:
    """(actions, the statement's resources as text) for every statement under `node`."""
    out: list[tuple[set[str], str]] = []
    if isinstance(node, dict):
        if "Effect" in node and "Action" in node:
            actions = node["Action"] if isinstance(node["Action"], list) else [node["Action"]]
            out.append((set(actions), str(node.get("Resource"))))
        for value in node.values():
            out += _actions_by_resource(value)
    elif isinstance(node, list):
        for value in node:
            out += _actions_by_resource(value)
    return out


def _granted(logical_id: str) -> dict[str, set[str]]:
    """action → the resources it is granted on, for one resource of the template."""
    out: dict[str, set[str]] = {}
    for actions, resource in _actions_by_resource(t.resources()[logical_id]["Properties"]):
        for a in actions:
            if "SchedulerConfig" in a:
                out.setdefault(a, set()).add(resource)
    return out


def test_each_role_gets_only_the_scheduler_config_calls_it_makes() -> None:
    assert set(_granted("ClusterReaderRole")) == {SCHEDULER.format("Describe"),
                                                  "sagemaker:ListClusterSchedulerConfigs"}
    assert set(_granted("ApplyFunction")) == {SCHEDULER.format(v) for v in ("Describe", "Create", "Update")}
    assert set(_granted("VerifyFunction")) == {SCHEDULER.format("Describe")}
    assert set(_granted("RollbackFunction")) == {SCHEDULER.format(v) for v in ("Describe", "Update", "Delete")}
    assert _granted("PlanFunction") == {}  # the plan reads the stored snapshot, never SageMaker
    others = set(t.resources()) - {"ApplyFunction", "RollbackFunction"}
    assert not [r for r in others for a in _granted(r) if a in WRITES]


def test_scheduler_config_calls_are_scoped_to_scheduler_config_arns() -> None:
    for role in ("ClusterReaderRole", "ApplyFunction", "VerifyFunction", "RollbackFunction"):
        for action, resources in _granted(role).items():
            if action == "sagemaker:ListClusterSchedulerConfigs":
                continue
            assert all("cluster-scheduler-config/*" in r for r in resources), (role, action, resources)
