"""Everything the demo runs against, on 127.0.0.1 and in this process: the HyperPod emulator as an HTTP server
(moto + compute quotas, seeded with the demo cluster), a Kueue API stand-in, Container Insights metrics in the
emulator's CloudWatch, a loopback Slack receiving the webhook POSTs, the approval HTTP API served on loopback, and
the application itself (`LocalStack`: the template's resources, the real state machine, the real handlers).

Every AWS call (the handlers', the state machine interpreter's, the demo's own reads) goes over HTTP to the
emulator: AWS_ENDPOINT_URL points boto3 there for as long as the world is open.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

from rebalancer_tools.emulator import DEMO, Emulator, SeededDemo
from rebalancer_tools.emulator.server import EmulatorServer
from rebalancer_tools.fakes import kube as kube_fake
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local import cast
from rebalancer_tools.local.approval_gateway import ApprovalGateway
from rebalancer_tools.local.sandbox import provision
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

REGION = "us-east-1"
ACCOUNT = "123456789012"


@dataclass(frozen=True, slots=True)
class World:
    endpoint: str
    emulator: Emulator
    seeded: SeededDemo
    kube: kube_fake.KubeState
    slack: SlackReceiver
    gateway: ApprovalGateway
    stack: LocalStack
    clock: TickingClock
    policy_text: str
    insights: cast.Insights = field(default_factory=cast.Insights)

    @property
    def cluster(self) -> str:
        return DEMO.cluster_name

    def client(self, service: str) -> Any:
        return self.stack.client(service)

    def publish_utilization(self, idle: tuple[str, ...] | None = None, hours: float = 6) -> None:
        """The teams' utilization up to now in the emulator's CloudWatch (`idle`: the teams idle from the previous
        publish on; None: as before)."""
        self.insights.publish(self.client("cloudwatch"), self.clock.t, idle, hours)

    def quotas(self) -> dict[str, dict[str, int]]:
        """team → instance type → accelerators, as DescribeComputeQuota shows them now (read over HTTP)."""
        sm = self.client("sagemaker")
        out: dict[str, dict[str, int]] = {}
        listed = sm.list_compute_quotas(ClusterArn=self.seeded.cluster_arn)["ComputeQuotaSummaries"]
        for summary in listed:
            q = sm.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"])
            team = q["ComputeQuotaTarget"]["TeamName"]
            out[team] = {r["InstanceType"]: int(r.get("Accelerators", 0))
                         for r in q["ComputeQuotaConfig"].get("ComputeQuotaResources", [])}
        return dict(sorted(out.items()))

    def versions(self) -> dict[str, int]:
        sm = self.client("sagemaker")
        listed = sm.list_compute_quotas(ClusterArn=self.seeded.cluster_arn)["ComputeQuotaSummaries"]
        return {s["ComputeQuotaTarget"]["TeamName"]: int(s["ComputeQuotaVersion"]) for s in listed}

    def healthy_capacity(self) -> dict[str, int]:
        """instance type → accelerators on nodes that are Running."""
        return {t: int(n) for (t, resource), n in sorted(self.emulator.healthy_capacity(self.cluster).items())
                if resource == "Accelerators"}


@contextmanager
def open_world(policy_text: str, *, clock: TickingClock | None = None) -> Iterator[World]:
    """Start every part, seed the cluster, the demand and the metrics, deploy the stack; stop it all on exit."""
    with ExitStack() as stack:
        server = stack.enter_context(EmulatorServer(quiet=True))
        port = server.endpoint.rsplit(":", 1)[-1]
        # The state machine interpreter reaches Lambda at localhost:$MOTO_PORT when it is not inside mock_aws.
        stack.enter_context(mock.patch.dict(os.environ, {
            "AWS_ENDPOINT_URL": server.endpoint, "MOTO_PORT": port, "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo", "AWS_SESSION_TOKEN": "demo", "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION}))
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):  # restored on exit by the patch above
            os.environ.pop(name, None)
        _reset(server.endpoint)  # moto's backends are per process: start from nothing, leave nothing behind
        stack.callback(_reset, server.endpoint)
        # The cluster and its quotas were set up a day before the story starts (so no cooldown is running).
        the_clock = clock or TickingClock(datetime.now(UTC) - timedelta(days=1))
        emulator = Emulator(ACCOUNT, REGION, clock=the_clock)
        kube_url, kube = stack.enter_context(kube_fake.serve(cast.kube_state()))
        seeded = provision(emulator, kube)  # as the sandbox: quotas, the EKS side with its add-on, steady demand
        the_clock.advance(24)
        slack = stack.enter_context(SlackReceiver())
        gateway = stack.enter_context(ApprovalGateway())
        local = stack.enter_context(LocalStack(
            clusters={DEMO.cluster_name: policy_text}, kube_url=kube_url, slack_webhook_url=slack.url,
            now=the_clock, region=REGION, account=ACCOUNT, approval_api_url=gateway.url))
        gateway.target = local.http
        world = World(server.endpoint, emulator, seeded, kube, slack, gateway, local, the_clock, policy_text)
        world.publish_utilization()
        yield world


def _reset(endpoint: str) -> None:
    """Forget every resource (moto's backends are per process: later users of it start clean)."""
    req = urllib.request.Request(f"{endpoint}/moto-api/reset", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass
