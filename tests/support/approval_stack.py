"""A stack waiting for an approval (the `waiting` fixture of tests/e2e/approvals): the real ASL on moto's
interpreter, the HyperPod emulator, a loopback Kueue API with research waiting for H100s, a loopback Slack, and the
approval HTTP API served on 127.0.0.1 (the demo's gateway: each HTTP request becomes the payload-2.0 event API
Gateway would pass)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rebalancer.app import wiring
from rebalancer.app.notifications.messages import email_links
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer.domain.plan import Plan
from rebalancer.domain.records import ApprovalRecord
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.local.approval_gateway import ApprovalGateway
from rebalancer_tools.local.stack import LocalStack, SlackReceiver
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import pod_set, serve, workload

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
POLICY = """
mode: approve
stability: {cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 1000, max_decrease_percent: 100}
teams:
  research: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  training: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  inference: {weight: 2, guarantee: {ml.p5.48xlarge: 4}}
  data-science: {weight: 1}
  platform: {weight: 1}
"""


@dataclass
class Waiting:
    """A run waiting in RequestApproval, and where to look."""

    stack: LocalStack
    emu: EmulatorHandle
    slack: SlackReceiver
    gateway: ApprovalGateway
    arn: str
    message: dict[str, Any]  # the SNS approval request

    @property
    def links(self) -> dict[str, str]:
        return email_links(str(self.message["Message"]))

    @property
    def plan(self) -> Plan:
        return Plan.model_validate(wiring.store().artifacts.get(self.arn.rsplit(":", 1)[-1], "PLAN"))

    def approval(self) -> ApprovalRecord:
        rec = wiring.store().approvals.get(approval_id_of(self.arn))
        assert rec is not None, "no approval record"
        return rec

    def quotas(self) -> dict[str, Any]:
        sm = self.emu.sagemaker
        arn = self.emu.emulator.cluster_arn(CLUSTER)
        return {s["ComputeQuotaId"]: sm.describe_compute_quota(ComputeQuotaId=s["ComputeQuotaId"])
                ["ComputeQuotaConfig"] for s in sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]}

    def approval_audit(self) -> list[dict[str, Any]]:
        return [a for a in self.stack.audit(CLUSTER) if a["kind"] == "approval"]


@contextmanager
def waiting_stack(env: dict[str, str] | None = None, slack_signing_secret: str | None = None) -> Iterator[Waiting]:
    """`env`: more of the functions' environment (e.g. APPROVAL_OIDC_ISSUER, as the template sets it with the JWT
    authorizer); `slack_signing_secret`: the Slack app's, for its buttons and commands."""
    clock = ticking()
    with (in_process_emulator(seed_demo=True, clock=clock) as emu, serve() as (kube_url, kube),
          SlackReceiver() as slack, ApprovalGateway() as gateway):
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=kube_url, slack_webhook_url=slack.url,
                        approval_api_url=gateway.url, now=clock, env=env or {},
                        slack_signing_secret=slack_signing_secret) as stack:
            gateway.target = stack.http
            event = load_event("hyperpod-node-health")
            event["detail"]["ClusterName"] = CLUSTER
            assert stack.trigger(event)["status"] == "started"
            [arn] = stack.executions()
            stack.wait_for_state(arn, "RequestApproval")
            stack.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")
            [message] = stack.sns_messages()
            yield Waiting(stack, emu, slack, gateway, arn, message)
