"""EventBridge-shaped events the emulator records for cluster changes (nothing delivers them; tests hand them on)."""

from __future__ import annotations

import datetime as dt

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from support.emulator import EmulatorHandle

from rebalancer_tools.emulator import DEMO


def test_node_failure_and_resize_record_events_with_the_injected_clock(emulator: EmulatorHandle) -> None:
    emu = emulator.emulator
    emu.set_clock(lambda: dt.datetime(2030, 5, 1, 12, 0, tzinfo=dt.UTC))
    arn = emu.create_cluster(DEMO.cluster_name, DEMO.groups)
    emu.fail_node(DEMO.cluster_name, "gpu-p5-3", "GPU_XID_ERROR")
    emu.resize_instance_group(DEMO.cluster_name, "gpu-p5", 3)

    health, resize = (EventBridgeModel.model_validate(e) for e in emu.events)
    assert health.detail_type == "SageMaker HyperPod Cluster Node Health Event"
    assert health.source == "aws.sagemaker"
    assert health.resources == [arn]
    assert health.time == dt.datetime(2030, 5, 1, 12, 0, tzinfo=dt.UTC)
    assert health.detail["InstanceId"] == "gpu-p5-3"
    assert health.detail["HealthSummary"]["HealthStatus"] == "Unhealthy"
    assert "InstanceGroupName" not in health.detail
    assert health.detail["HealthSummary"]["HealthStatusReason"] == "GPU_XID_ERROR"

    assert resize.detail_type == "SageMaker HyperPod Cluster State Change"
    groups = {g["InstanceGroupName"]: g for g in resize.detail["InstanceGroups"]}
    assert groups["gpu-p5"]["CurrentCount"] == 3
    assert groups["gpu-g5"]["InstanceType"] == "ml.g5.12xlarge"
    assert health.id != resize.id


def test_event_ids_repeat_across_runs(emulator: EmulatorHandle) -> None:
    emu = emulator.emulator
    emu.create_cluster("c", [("g", "ml.trn2.48xlarge", 1)])
    emu.fail_node("c", "g-0")
    emu.heal_node("c", "g-0")
    ids = [e["id"] for e in emu.events]
    assert emu.events[1]["detail"]["HealthSummary"]["HealthStatus"] == "Healthy"
    assert len(set(ids)) == 2
    emulator.emulator.backend.reset()
    emu.create_cluster("c", [("g", "ml.trn2.48xlarge", 1)])
    emu.fail_node("c", "g-0")
    assert emu.events[0]["id"] == ids[0]
