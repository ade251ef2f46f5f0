from __future__ import annotations

from datetime import UTC, datetime

from rebalancer.app.observe import measure
from rebalancer.domain.snapshot import Snapshot

P5 = "ml.p5.48xlarge"


def _snapshot(quotas: dict[str, int], in_use: dict[str, int], pending: dict[str, int], healthy: int) -> Snapshot:
    return Snapshot.model_validate({
        "taken_at": datetime(2026, 11, 30, tzinfo=UTC),
        "cluster": {"ClusterName": "c", "ClusterArn": "arn:c",
                    "InstanceGroups": [{"InstanceGroupName": "g", "InstanceType": P5, "CurrentCount": 4}]},
        "nodes": [{"InstanceGroupName": "g", "InstanceId": f"i-{i}", "InstanceType": P5,
                   "InstanceStatus": {"Status": "Running" if i < healthy else "Failure"}} for i in range(4)],
        "quotas": [{"ComputeQuotaId": f"q-{t}", "Name": t, "ComputeQuotaVersion": 1, "Status": "Created",
                    "ComputeQuotaTarget": {"TeamName": t},
                    "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": n}]}}
                   for t, n in quotas.items()],
        "demand": {t: {P5: {"in_use": {"accelerators": in_use.get(t, 0)},
                            "pending": {"accelerators": pending.get(t, 0)}}}
                   for t in set(in_use) | set(pending)},
    })


def test_stranded_accelerators_are_idle_in_one_team_while_another_waits() -> None:
    m = measure(_snapshot({"a": 16, "b": 16}, in_use={"a": 4, "b": 16}, pending={"b": 8}, healthy=4))
    assert {t.team: (t.allocated, t.idle, t.pending) for t in m.teams} == {"a": (16, 12, 0), "b": (16, 0, 8)}
    assert m.capacity == 32
    assert m.stranded == 8
    assert m.score == 0.25


def test_no_waiting_means_nothing_stranded_and_no_capacity_means_score_zero() -> None:
    assert measure(_snapshot({"a": 16}, in_use={}, pending={}, healthy=4)).stranded == 0
    assert measure(_snapshot({"a": 16}, in_use={}, pending={"a": 8}, healthy=0)).score == 0


def test_an_instance_type_missing_from_the_catalog_adds_no_capacity() -> None:
    snap = _snapshot({"a": 16, "b": 16}, in_use={"a": 4, "b": 16}, pending={"b": 8}, healthy=4)
    doc = snap.model_dump(mode="json")
    doc["cluster"]["InstanceGroups"].append({"InstanceGroupName": "x", "InstanceType": "ml.zz9.future",
                                             "CurrentCount": 2})
    doc["nodes"] += [{"InstanceGroupName": "x", "InstanceId": f"i-x{i}", "InstanceType": "ml.zz9.future",
                      "InstanceStatus": {"Status": "Running"}} for i in range(2)]
    m = measure(Snapshot.model_validate(doc))
    assert m.capacity == 32
    assert m.stranded == 8
