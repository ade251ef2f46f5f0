"""A small emulated cluster for adapter and CLI tests: 4 × ml.p5.48xlarge (32 GPUs) held by five teams a–e with
10, 8, 6, 4 and 4 GPUs: the quotas sum to the capacity, so raising one before lowering another trips the
emulator's invariant monitor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.quotas import ComputeQuota
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator.control import Emulator
from support.fake_clock import FakeClock
from support.kube_api import KubeState, cluster_queue, pod_set, serve, workload
from support.template import create_table

P5 = "ml.p5.48xlarge"
BEFORE = {"a": 10, "b": 8, "c": 6, "d": 4, "e": 4}
AFTER = {"a": 6, "b": 6, "c": 8, "d": 6, "e": 6}  # moves 6 GPUs: a and b down first, then c, d, e up
ORDER = ["a", "b", "c", "d", "e"]


def config(gpus: int) -> dict[str, Any]:
    return {"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": gpus}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
            "PreemptTeamTasks": "LowerPriority"}


def setup_cluster(emu: Emulator, sm: Any, name: str = "c1") -> tuple[str, tuple[ComputeQuota, ...]]:
    """Creates the cluster and the settled quotas; returns the cluster ARN and the quotas as read."""
    arn = emu.create_cluster(name, [("p5", P5, 4)])
    for team, gpus in BEFORE.items():
        sm.create_compute_quota(Name=f"{team}-quota", ClusterArn=arn, ComputeQuotaConfig=config(gpus),
                                ComputeQuotaTarget={"TeamName": team, "FairShareWeight": 10})
    emu.settle()
    return arn, SageMakerReader(sm).quotas(arn)


def plan_requests(quotas: tuple[ComputeQuota, ...], after: dict[str, int] = AFTER) -> list[QuotaRequest]:
    """The UpdateComputeQuota requests from BEFORE to `after`, in ORDER (the decreases of AFTER first)."""
    by_team = {q.team: q for q in quotas}
    return [QuotaRequest(operation="UpdateComputeQuota", team=t, parameters={
        "ComputeQuotaId": by_team[t].ComputeQuotaId, "TargetVersion": by_team[t].ComputeQuotaVersion,
        "ComputeQuotaConfig": config(after[t]), "ComputeQuotaTarget": {"TeamName": t, "FairShareWeight": 10}})
        for t in ORDER if after[t] != BEFORE[t]]


def writer(aws: AwsClients, clock: FakeClock) -> QuotaWriter:
    return QuotaWriter(aws.client("sagemaker"), Poller(sleep=clock.sleep, clock=clock, interval=2, timeout=60))


def gpus(emu: Emulator) -> dict[str, int]:
    """Each team's GPUs as the emulator holds them now."""
    return {q["ComputeQuotaTarget"]["TeamName"]: q["ComputeQuotaConfig"]["ComputeQuotaResources"][0]["Accelerators"]
            for q in emu.quotas()}


def violations(emu: Emulator, arn: str) -> list[Any]:
    """Writes after which the cluster's quotas summed above its healthy capacity."""
    records = [r for r in emu.monitor.records if r.cluster_arn == arn]
    assert records, "the monitor recorded no write at all"
    return [r for r in records if not r.ok]


@contextmanager
def queueing_kube() -> Iterator[str]:
    """A loopback Kueue API server where a and b sit mostly idle and c, d and e queue work; yields its URL."""
    state = KubeState()
    nominal = {P5: {"nvidia.com/gpu": 32}}
    state.add(
        cluster_queue("a", nominal, reserved={P5: {"nvidia.com/gpu": 4}}),
        cluster_queue("b", nominal, reserved={P5: {"nvidia.com/gpu": 4}}),
        cluster_queue("c", nominal, reserved={P5: {"nvidia.com/gpu": 6}}),
        cluster_queue("d", nominal, reserved={P5: {"nvidia.com/gpu": 4}}),
        cluster_queue("e", nominal, reserved={P5: {"nvidia.com/gpu": 4}}),
        workload("c", "big", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]),
        workload("d", "mid", [pod_set(1, {"nvidia.com/gpu": 4}, P5)]),
        workload("e", "mid", [pod_set(1, {"nvidia.com/gpu": 4}, P5)]),
    )
    with serve(state) as (url, _):
        yield url


def raised(emu: Emulator, arn: str) -> list[Any]:
    """API writes that raised a pool of the cluster above its healthy capacity (whatever it held before)."""
    return [r for r in emu.monitor.raised_above_capacity() if r.cluster_arn == arn]


def cli_table(emu: Emulator, aws: AwsClients) -> str:
    """The five teams' cluster set up on the emulator, and the template's table made for the CLI to record in."""
    setup_cluster(emu, aws.client("sagemaker"))
    return create_table(aws.client("dynamodb"), "rebalancer-table")


def cli_apply(tmp_path: Path, kube: str, policy: str, *extra: str) -> Result:
    """`rebalancer apply` on c1 under `policy`, reading Kueue at `kube`, with `extra` options."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    return CliRunner().invoke(cli, ["apply", "--cluster", "c1", "--kube-url", kube, "--metrics-window", "0",
                                    "--policy", str(path), "--poll-interval", "0.1", *extra])
