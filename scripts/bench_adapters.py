"""Adapter figures, offline: Kueue read time over loopback, GetMetricData calls per team count (moto), and apply
time / API calls over HTTP against the emulator. Run: .venv/bin/python scripts/bench_adapters.py"""

from __future__ import annotations

import os
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import boto3
from moto import mock_aws

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.cloudwatch import CloudWatchReader
from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token
from rebalancer.adapters.kubernetes.kueue import KueueReader
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.domain.plan import QuotaRequest
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.emulator.server import EmulatorServer
from rebalancer_tools.fakes.kube import KubeState, cluster_queue, pod_set, serve, workload

P5 = "ml.p5.48xlarge"
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")


def kueue() -> None:
    for teams, per_team in ((50, 20), (200, 20)):
        state = KubeState()
        state.add(*(cluster_queue(f"t{i}", {P5: {"nvidia.com/gpu": 64}}, reserved={P5: {"nvidia.com/gpu": 8}})
                    for i in range(teams)))
        state.add(*(workload(f"t{i}", f"w{j}", [pod_set(2, {"nvidia.com/gpu": 8, "cpu": "96", "memory": "1Ti"}, P5)])
                    for i in range(teams) for j in range(per_team)))
        with serve(state) as (url, _):
            reader = KueueReader(api_client_with_token(url, lambda: "x"))
            t = time.perf_counter()
            reader.read()
            took = time.perf_counter() - t
        print(f"kueue: {teams} ClusterQueues, {teams * per_team} Workloads: {took * 1000:.0f} ms, "
              f"{len(state.requests)} list requests")


def cloudwatch() -> None:
    with mock_aws():
        cw = boto3.client("cloudwatch", region_name="us-east-1")
        end = datetime(2026, 11, 30, 5, tzinfo=UTC)
        for n in (10, 250, 1000):
            reader = CloudWatchReader(cw)
            reader.utilization("eks", [f"t{i}" for i in range(n)], end - timedelta(hours=1), end)
            print(f"cloudwatch: {n} teams -> {reader.calls} GetMetricData call(s)")


def config(gpus: int) -> dict[str, object]:
    return {"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": gpus}]}


def apply() -> None:
    with EmulatorServer(quiet=True) as server:
        os.environ["AWS_ENDPOINT_URL"] = server.endpoint
        emu = Emulator()
        for teams, reads in ((10, 0), (10, 2), (40, 2)):
            arn = emu.create_cluster(f"bench-{teams}-{reads}", [("p5", P5, teams)])  # 8 GPUs per team
            sm = AwsClients(region="us-east-1").client("sagemaker")
            for i in range(teams):
                sm.create_compute_quota(Name=f"t{i}-quota", ClusterArn=arn, ComputeQuotaConfig=config(8),
                                        ComputeQuotaTarget={"TeamName": f"t{i}"})
            emu.settle()
            emu.set_transition_reads(reads)
            before = sorted(SageMakerReader(sm).quotas(arn), key=lambda q: int(q.team[1:]))
            requests = [QuotaRequest(operation="UpdateComputeQuota", team=q.team, parameters={
                "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": q.ComputeQuotaVersion,
                "ComputeQuotaConfig": config(4 if i < teams // 2 else 12)}) for i, q in enumerate(before)]
            calls: Counter[str] = Counter()
            sm.meta.events.register("before-call", lambda model, _c=calls, **_: _c.update([model.name]))
            t = time.perf_counter()
            report = QuotaWriter(sm, Poller(interval=0.0)).apply(arn, requests, before)
            took = time.perf_counter() - t
            bad = [r for r in emu.monitor.records if r.cluster_arn == arn and not r.ok]
            print(f"apply: {len(requests)} changes (half decreases), {reads} lagging reads per write: {took:.2f} s, "
                  f"succeeded={report.succeeded}, calls={dict(calls)}, invariant violations={len(bad)}")


if __name__ == "__main__":
    kueue()
    cloudwatch()
    apply()
