"""End to end, the preemptions a plan names against the ones Kueue makes: the real state machine on moto's
interpreter with the project's handlers, the HyperPod emulator, and a loopback Kueue API whose Kueue takes back nominal
quota when the quotas change (rebalancer_tools.fakes.kueue_reclaim, written apart from the controller's forecast).
training runs 20 H100s of its 12 (three workloads admitted 6 h, 3 h and 1 h ago), inference and data-science 4 each,
and research (weight 3) waits for a gang of 16: the plan raises research to 16 and cuts training to 8, so Kueue
takes back training's two newest workloads. The approval lists them, training is told on its own topic before the
write, and after it the run records what Kueue preempted beside what the plan named. In the second walk the cluster
is full with every team within its quota, and platform, new on the H100s, gets quota within one run through the
reclaim of young work: training's workload admitted 5 minutes ago (less than reclaim.max_age_minutes) is preempted,
those admitted 20 minutes and 6 hours ago run on, though training stays above its fair share."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urljoin

import pytest
from support.approval_page import review_form
from support.clock import T0, ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import KubeState, cluster_queue, pod_set, serve, workload

from rebalancer.app import wiring
from rebalancer.app.notifications.messages import email_links
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.fakes.kueue_reclaim import reclaim
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import TEAM_TOPIC_PREFIX, LocalStack, SlackReceiver

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
GPU = "nvidia.com/gpu"
TRAINING_TOPIC = f"arn:aws:sns:us-east-1:123456789012:{TEAM_TOPIC_PREFIX}training"
POLICY = f"""
mode: auto
stability: {{cooldown_minutes: 0, max_move: 64}}
approval: {{moved_accelerators: 1000, max_decrease_percent: 100, max_preempted_gpu_hours: 1}}
reclaim: {{notice_minutes: 0}}
teams:
  research: {{weight: 3}}
  training: {{weight: 1, notice_topic: "{TRAINING_TOPIC}"}}
  inference: {{weight: 1}}
  data-science: {{weight: 1}}
  platform: {{weight: 1}}
"""
NAMED = [f"training/ft-mid@{P5}", f"training/ft-new@{P5}"]


def _at(hours_ago: float) -> str:
    return (T0 - timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def quotas(emu: EmulatorHandle) -> dict[str, dict[str, int]]:
    """team → instance type → accelerators, as the compute quotas hold them now."""
    sm = emu.sagemaker
    out: dict[str, dict[str, int]] = {}
    for s in sm.list_compute_quotas(ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ComputeQuotaSummaries"]:
        q = sm.describe_compute_quota(ComputeQuotaId=s["ComputeQuotaId"])
        out[q["ComputeQuotaTarget"]["TeamName"]] = {r["InstanceType"]: int(r.get("Accelerators", 0))
                                                    for r in q["ComputeQuotaConfig"]["ComputeQuotaResources"]}
    return out


def _gang_waits() -> list[dict[str, Any]]:
    """training runs 20 H100s of its 12, research's gang of 16 waits (the module's first walk)."""
    return [workload("research", "pretrain", [pod_set(2, {GPU: 8}, P5)], created=_at(0.5)),
            *(workload("training", name, [pod_set(1, {GPU: gpus}, P5)], admitted_on=P5, admitted=_at(ago),
                       created=_at(ago + 0.1))
              for name, gpus, ago in (("ft-old", 8, 6), ("ft-mid", 4, 3), ("ft-new", 8, 1))),
            workload("inference", "serving", [pod_set(1, {GPU: 4}, P5)], admitted_on=P5, admitted=_at(5)),
            workload("data-science", "notebooks", [pod_set(1, {GPU: 4}, P5)], admitted_on=P5, admitted=_at(4))]


def _new_team_waits() -> list[dict[str, Any]]:
    """Every H100 runs within its team's quota (the ClusterQueues reserve it); training (protected_in_use) runs its 12
    in three workloads of 4, admitted 6 h, 20 min and 5 min ago; platform, with no H100 quota, queues two of 4."""
    runs = {"research": 12, "training": 12, "inference": 4, "data-science": 4}
    return [*(cluster_queue(team, {P5: {GPU: n}}, {P5: {GPU: n}}, admitted_workloads=1) for team, n in runs.items()),
            cluster_queue("platform", {P5: {GPU: 0}}, pending_workloads=2),
            workload("research", "pretrain", [pod_set(1, {GPU: 12}, P5)], admitted_on=P5, admitted=_at(4)),
            *(workload("training", name, [pod_set(1, {GPU: 4}, P5)], admitted_on=P5, admitted=_at(ago))
              for name, ago in (("ft-old", 6), ("ft-mid", 20 / 60), ("ft-young", 5 / 60))),
            workload("inference", "serving", [pod_set(1, {GPU: 4}, P5)], admitted_on=P5, admitted=_at(5)),
            workload("data-science", "notebooks", [pod_set(1, {GPU: 4}, P5)], admitted_on=P5, admitted=_at(4)),
            *(workload("platform", name, [pod_set(1, {GPU: 4}, P5)], created=_at(ago))
              for name, ago in (("first-job", 0.1), ("second-job", 0.05)))]


@pytest.fixture
def world(request: pytest.FixtureRequest) -> Iterator[tuple[EmulatorHandle, KubeState, str, SlackReceiver,
                                                             TickingClock]]:
    """The emulator, the loopback Kueue holding the workloads of `request.param` (default: _gang_waits), Slack."""
    clock = ticking()
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (url, kube),
          SlackReceiver() as slack):
        kube.add(*getattr(request, "param", _gang_waits)())
        yield emu, kube, url, slack, clock


def test_the_preemptions_named_are_the_ones_kueue_makes_and_the_team_is_told_first(
        world: tuple[EmulatorHandle, KubeState, str, SlackReceiver, TickingClock]) -> None:
    emu, kube, kube_url, slack, clock = world
    made: list[list[str]] = []
    # nothing moves at the quotas as seeded: research's gang is larger than its 12
    assert reclaim(kube, quotas(emu), {P5: 32}, _at(0)) == []

    def kueue_after_verify(result: dict[str, Any]) -> dict[str, Any]:
        if result["done"]:  # the quotas are written: Kueue reacts before anything reads it again
            made.append(reclaim(kube, quotas(emu), {P5: 32}, clock().strftime("%Y-%m-%dT%H:%M:%SZ")))
        return result

    with LocalStack(clusters={CLUSTER: POLICY}, kube_url=kube_url, slack_webhook_url=slack.url,
                    now=clock, hooks={"verify": kueue_after_verify}) as stack:
        sns = stack.client("sns")
        sqs = stack.client("sqs")
        sns.create_topic(Name=f"{TEAM_TOPIC_PREFIX}training")
        queue = sqs.create_queue(QueueName="training-notices")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=TRAINING_TOPIC, Protocol="sqs", Endpoint=queue_arn)

        event = load_event("hyperpod-node-health")
        event["detail"]["ClusterName"] = CLUSTER
        assert stack.trigger(event)["status"] == "started"
        [arn] = stack.executions()
        stack.wait_for_state(arn, "RequestApproval")
        execution = arn.rsplit(":", 1)[-1]
        plan = wiring.store().artifacts.get(execution, "PLAN")
        assert sorted(f"{p['team']}/{p['workload']}@{p['pool']}" for p in plan["preemptions"]) == NAMED
        assert plan["preempted_gpu_hours"] == pytest.approx(8 * 1 + 4 * 3, abs=0.1)

        # The approval lists them, on SNS (the email) and Slack
        stack.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")
        [request] = stack.sns_messages()
        assert "Would preempt 2 running workloads, 20.0 GPU-hours of work at risk:" in request["Message"]
        assert f"training/ft-new on {P5}: 8 accelerators, ran 1h 00m (8.0 GPU-hours)" in request["Message"]
        assert f"training/ft-mid on {P5}: 4 accelerators, ran 3h 00m (12.0 GPU-hours)" in request["Message"]
        assert "above approval.max_preempted_gpu_hours 1" in request["Message"]
        assert "training/ft-new" in json.dumps(slack.posts[0])
        assert made == []  # nothing written yet

        url = email_links(str(request["Message"]))["Approve"]
        action, fields = review_form(stack.http("GET", url)["body"])
        decided = stack.http("POST", urljoin(url, action), form={**fields, "decision": "approve", "name": "alice"})
        assert decided["statusCode"] == 200, decided["body"]
        done = stack.wait(arn)
        assert done["status"] == "SUCCEEDED", done

        states = stack.states_entered(arn)
        # told before the write: Notice, then the recheck, then Apply
        assert states.index("Notice") < states.index("WaitForNotice") < states.index("Apply")
        assert states[-4:] == ["Verified", "Observe", "NotifyApplied", "Applied"]
        kinds = [(a["kind"], a["outcome"]) for a in stack.audit(CLUSTER)]
        assert kinds.index(("notify-notice", "sent")) < kinds.index(("apply", "applied"))

        # training's own topic got its notice, naming its workloads only
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        [told] = [json.loads(m["Body"]) for m in got]
        assert told["Subject"] == f"Notice: quota changes on {CLUSTER} will preempt running work"
        assert "training/ft-new" in told["Message"]
        assert "training/ft-mid" in told["Message"]
        assert "research" not in told["Message"]

        # Kueue preempted what the plan named, and the run records both
        assert [sorted(m) for m in made] == [["training/ft-mid", "training/ft-new"]]
        [seen] = [a for a in stack.audit(CLUSTER) if a["kind"] == "preempted"]
        assert (seen["outcome"], seen["before"], seen["after"]) == ("as_named", NAMED, NAMED)
        assert wiring.store().artifacts.get(execution, "PREEMPTED")["preempted"] == NAMED
        assert quotas(emu)["research"][P5] == 16


@pytest.mark.parametrize("world", [_new_team_waits], indirect=True)
def test_a_new_team_in_a_full_cluster_gets_quota_within_one_run_from_young_work_only(
        world: tuple[EmulatorHandle, KubeState, str, SlackReceiver, TickingClock]) -> None:
    emu, kube, kube_url, slack, clock = world
    made: list[list[str]] = []
    assert reclaim(kube, quotas(emu), {P5: 32}, _at(0)) == []  # platform has no H100 quota: Kueue leaves it waiting

    def kueue_after_verify(result: dict[str, Any]) -> dict[str, Any]:
        if result["done"]:
            made.append(reclaim(kube, quotas(emu), {P5: 32}, clock().strftime("%Y-%m-%dT%H:%M:%SZ")))
        return result

    # platform's fair share is 8 and training's 4: the reclaim may take 8 of training's 12, but only what is young
    policy = (POLICY.replace("training: {weight: 1,", "training: {weight: 1, protected_in_use: true,")
              .replace("platform: {weight: 1}", "platform: {weight: 2}"))
    with LocalStack(clusters={CLUSTER: policy}, kube_url=kube_url, slack_webhook_url=slack.url,
                    now=clock, hooks={"verify": kueue_after_verify}) as stack:
        stack.client("sns").create_topic(Name=f"{TEAM_TOPIC_PREFIX}training")
        event = load_event("hyperpod-node-health")
        event["detail"]["ClusterName"] = CLUSTER
        assert stack.trigger(event)["status"] == "started"
        [arn] = stack.executions()
        done = stack.wait(arn)  # 0.3 GPU-hours at risk: within approval.max_preempted_gpu_hours, no admin asked
        assert done["status"] == "SUCCEEDED", done
        plan = wiring.store().artifacts.get(arn.rsplit(":", 1)[-1], "PLAN")

    # one run: training's young workload named and preempted; ft-mid (20 min, past reclaim.max_age_minutes 15) and
    # ft-old left running though training stays above its fair share; platform's first workload admitted
    cuts = {c["team"]: (c["before"], c["after"]) for c in plan["changes"] if c["instance_type"] == P5}
    assert cuts == {"training": (12, 8), "platform": (0, 4)}
    [training] = [c for c in plan["changes"] if c["team"] == "training" and c["instance_type"] == P5]
    assert "reclaims 4 accelerators of work admitted 5 min ago for team platform" in training["reason"]
    assert [f"{p['team']}/{p['workload']}" for p in plan["preemptions"]] == ["training/ft-young"]
    assert made == [["training/ft-young"]]
    assert (quotas(emu)["platform"][P5], quotas(emu)["training"][P5]) == (4, 8)
    running = {f"{w['metadata']['namespace'].removeprefix('hyperpod-ns-')}/{w['metadata']['name']}"
               for w in kube.objects["workloads"] if w["status"].get("admission")}
    assert {"training/ft-old", "training/ft-mid", "platform/first-job"} <= running
    assert not {"training/ft-young", "platform/second-job"} & running
