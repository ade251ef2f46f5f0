"""A plan giving one team whole GPUs and MIG partitions of the same instance type, end to end: the real state
machine and handlers against the emulator, which takes them as two entries of that type (one AcceleratorPartition
per entry is all the API's ComputeQuotaResourceConfig can hold), and a loopback Kueue API server whose node exposes
the partitions."""

from __future__ import annotations

from typing import Any

import pytest
from support.clock import ticking
from support.emulator import in_process_emulator
from support.events import load_event
from support.kube_api import node, pod_set, serve, workload

from rebalancer_tools.emulator import DEMO
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
MIG = "mig-1g.10gb"
POLICY = f"""
mode: auto
stability: {{cooldown_minutes: 0, max_move: null}}
approval: {{moved_accelerators: 100000, max_decrease_percent: 100}}
teams:
  research: {{weight: 3}}
  training: {{weight: 3}}
  inference: {{weight: 2, cap: {{{P5}: 4}}}}
  data-science: {{weight: 1}}
  platform: {{weight: 1, cap: {{"{P5}:{MIG}": 7}}}}
"""


def test_one_quota_holds_whole_gpus_and_partitions_of_one_type() -> None:
    clock = ticking()
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube),
          SlackReceiver() as slack):
        # One of the four H100 nodes has a GPU carved into seven 1g.10gb partitions; platform wants all seven
        # and two whole GPUs beside them.
        kube.add(node("gpu-p5-0", P5, {"nvidia.com/gpu": 7, f"nvidia.com/{MIG}": 7}),
                 workload("platform", "notebooks", [pod_set(7, {f"nvidia.com/{MIG}": 1}, P5)]),
                 workload("platform", "eval", [pod_set(1, {"nvidia.com/gpu": 2}, P5)]))
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=url, slack_webhook_url=slack.url, now=clock) as stack:
            event = load_event("hyperpod-node-health")
            event["detail"]["ClusterName"] = CLUSTER
            assert stack.trigger(event)["status"] == "started"
            [arn] = stack.executions()
            assert stack.wait(arn)["status"] == "SUCCEEDED"
            assert "Apply" in stack.states_entered(arn)
        sm = emu.sagemaker
        quota = sm.describe_compute_quota(ComputeQuotaId=emu.demo.quota_ids["platform"])  # type: ignore[union-attr]
        entries: list[dict[str, Any]] = quota["ComputeQuotaConfig"]["ComputeQuotaResources"]
        assert emu.emulator.monitor.violations(api_only=True) == []
    p5 = [e for e in entries if e["InstanceType"] == P5]
    assert {"InstanceType": P5, "AcceleratorPartition": {"Type": MIG, "Count": 7}} in p5
    whole = [e for e in p5 if "AcceleratorPartition" not in e]
    assert len(whole) == 1
    assert whole[0]["Accelerators"] >= 2
