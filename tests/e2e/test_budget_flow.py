"""End to end through the real state machine on the emulator: a team's use is metered run after run; crossing 80 %
of its budget is announced once on SNS and Slack, and past 100 % its quota drops to its guarantee with the budget
as the reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import cluster_queue, pod_set, serve, workload

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app import wiring
from rebalancer.domain.policy import Policy
from rebalancer.domain.recorded_context import RecordedContext
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.planner import make_plan
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
POLICY = """
mode: auto
stability: {cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 1000, max_decrease_percent: 100}
teams:
  research: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  training:
    weight: 3
    guarantee: {ml.p5.48xlarge: 4}
    budget: {accelerator_hours: 10, on_exhausted: guarantee_only}
  inference: {weight: 2, guarantee: {ml.p5.48xlarge: 4}}
  data-science: {weight: 1}
  platform: {weight: 1}
"""


def p5_quota(emu: EmulatorHandle, team: str) -> int:
    held = emu.accelerators(CLUSTER, team, P5)
    assert held is not None, f"no quota for {team}"
    return held


@pytest.fixture
def flow() -> Iterator[tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]]:
    clock = ticking()
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube),
          SlackReceiver() as slack):
        # training runs 8 H100s the whole time; research waits for 16 more.
        kube.add(workload("research", "pretrain", [pod_set(2, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5),
                 cluster_queue("training", {P5: {"nvidia.com/gpu": 8}}, reserved={P5: {"nvidia.com/gpu": 8}},
                               admitted_workloads=1))
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=url, slack_webhook_url=slack.url, now=clock) as stack:
            yield stack, emu, slack, clock


def run(stack: LocalStack, clock: TickingClock, minutes: float) -> dict[str, Any]:
    clock.advance(minutes=minutes)
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert stack.trigger(event)["status"] == "started"
    arn = stack.executions()[-1]
    done = stack.wait(arn)
    assert done["status"] == "SUCCEEDED", done
    return done


def budget_posts(slack: SlackReceiver) -> list[dict[str, Any]]:
    return [p for p in slack.posts if p["blocks"][0]["text"]["text"].startswith("Budget")]


def test_a_team_is_told_at_80_percent_and_held_at_its_guarantee_past_100(
        flow: tuple[LocalStack, EmulatorHandle, SlackReceiver, TickingClock]) -> None:
    stack, emu, slack, clock = flow
    run(stack, clock, 0)  # the first reading starts the meter
    assert p5_quota(emu, "training") > 4
    stack.sns_messages()

    # 8 GPUs for 30 + 30 minutes: 8 accelerator-hours of 10.
    run(stack, clock, 30)
    run(stack, clock, 30)
    alerts = [m for m in stack.sns_messages() if m["Subject"].startswith("Budget")]
    assert [m["Subject"] for m in alerts] == [f"Budget thresholds reached on {CLUSTER}"]
    assert "training: budget 80 % used (8 of 10 accelerator-hours" in alerts[0]["Message"]
    assert "passed 50 %, 80 %" in alerts[0]["Message"]
    assert len(budget_posts(slack)) == 1
    assert p5_quota(emu, "training") > 4

    # Another half hour: 12 of 10. The quota drops to the guarantee and the change says why.
    run(stack, clock, 30)
    assert p5_quota(emu, "training") == 4
    messages = stack.sns_messages()
    applied = next(m for m in messages if m["Subject"].startswith("Quotas rebalanced"))
    assert f"training {P5} accelerators:" in applied["Message"]
    assert "budget 120 % used (12 of 10 accelerator-hours" in applied["Message"]
    assert "quota held at its guarantee" in applied["Message"]
    [alert] = [m for m in messages if m["Subject"].startswith("Budget")]
    assert "passed 100 %" in alert["Message"]
    assert "50 %" not in alert["Message"].split("passed", 1)[1]  # each threshold once per period

    # The thresholds are not announced again on the next run.
    run(stack, clock, 15)
    assert not [m for m in stack.sns_messages() if m["Subject"].startswith("Budget")]
    assert len(budget_posts(slack)) == 2

    # That run, planned again offline from what it stored beside its snapshot: the same plan.
    store = Store(wiring.store().table_name, resource=boto3.resource("dynamodb", region_name=stack.region))
    execution = stack.executions()[-1].rsplit(":", 1)[-1]
    recorded = RecordedContext.model_validate(store.artifacts.get(execution, "CONTEXT"))
    assert recorded.budget_usage["training"].accelerator_hours > 10
    again = make_plan(Snapshot.model_validate(store.artifacts.get(execution, "SNAPSHOT")),
                      Policy.model_validate(yaml.safe_load(POLICY)), recorded.planned_at, context=recorded.context())
    assert again.model_dump(mode="json") == store.artifacts.get(execution, "PLAN")
