"""The emulator's HTTP controls (RemoteEmulator) and `rebalancer emulator` as a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import boto3
import pytest
from support.emulator import EmulatorHandle, http_emulator

from rebalancer_tools.emulator import DEMO
from rebalancer_tools.emulator.http_control import RemoteEmulator


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with http_emulator() as handle:
        yield handle


def test_remote_controls_drive_the_server(emu: EmulatorHandle) -> None:
    assert emu.endpoint is not None
    remote = RemoteEmulator(emu.endpoint)
    seeded = remote.seed_demo()
    sm = emu.sagemaker
    assert len(sm.list_compute_quotas(ClusterArn=seeded["cluster_arn"])["ComputeQuotaSummaries"]) == len(DEMO.teams)

    remote.fail_node(DEMO.cluster_name, "gpu-g5-0", "XID 79")
    node = sm.describe_cluster_node(ClusterName=DEMO.cluster_name, NodeId="gpu-g5-0")["NodeDetails"]
    assert node["InstanceStatus"] == {"Status": "Failure", "Message": "XID 79"}
    assert remote.invariant()["violations"] == 1
    assert [e["detail"]["InstanceId"] for e in remote.events()] == ["gpu-g5-0"]

    remote.resize_instance_group(DEMO.cluster_name, "gpu-g5", 5)
    assert len(sm.list_cluster_nodes(ClusterName=DEMO.cluster_name, InstanceGroupNameContains="gpu-g5")[
        "ClusterNodeSummaries"]) == 5

    remote.set_transition_reads(1)
    qid = seeded["quota_ids"]["research"]
    assert remote.external_edit("research-quota") == 2
    sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=2, ActivationState="Enabled")
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["Status"] == "Updating"
    remote.settle()
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["Status"] == "Updated"

    remote.inject("throttle", "ListComputeQuotas", times=1)
    with pytest.raises(sm.exceptions.ClientError):
        emu.client(max_attempts=1).list_compute_quotas()
    remote.clear_faults()
    emu.client(max_attempts=1).list_compute_quotas()


def test_remote_errors_name_the_problem(emu: EmulatorHandle) -> None:
    assert emu.endpoint is not None
    remote = RemoteEmulator(emu.endpoint)
    with pytest.raises(RuntimeError, match="Cluster nope not found"):
        remote.fail_node("nope", "n-0")
    with pytest.raises(RuntimeError, match="meteor-strike"):
        remote.inject("meteor-strike")


def test_the_package_runs_as_a_module_with_its_emulator_command() -> None:
    """`python -m rebalancer_tools` is the command line. The sandbox it serves from a separate process is
    tests/infra/test_wheel_install.py's: started by the installed command, its demo quotas read back through
    `rebalancer snapshot`, stopped by Ctrl-C with exit 0 (a second sandbox process here cost 7 s)."""
    done = subprocess.run([sys.executable, "-m", "rebalancer_tools", "emulator", "--help"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr
    assert "--seed-demo" in done.stdout


def test_remote_controls_address_one_region(emu: EmulatorHandle) -> None:
    assert emu.endpoint is not None
    ireland = RemoteEmulator(emu.endpoint, region="eu-west-1")
    ireland.create_cluster("eu", [("g", "ml.g6e.12xlarge", 1)])
    ireland.fail_node("eu", "g-0")
    assert emu.sagemaker.list_clusters()["ClusterSummaries"] == []
    eu = boto3.client("sagemaker", endpoint_url=emu.endpoint, region_name="eu-west-1")
    assert [c["ClusterName"] for c in eu.list_clusters()["ClusterSummaries"]] == ["eu"]
    assert [r["operation"] for r in ireland.invariant()["records"]] == ["control:node-status"]
    assert RemoteEmulator(emu.endpoint).invariant()["records"] == []


def test_a_region_no_partition_has_is_one_line_naming_it_not_a_500_page(
        emu: EmulatorHandle, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    from click.testing import CliRunner

    from rebalancer_tools.cli import cli

    assert emu.endpoint is not None
    monkeypatch.setenv("AWS_ENDPOINT_URL", emu.endpoint)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    got = CliRunner().invoke(cli, ["snapshot", "--cluster", DEMO.cluster_name, "--no-kube", "--region", "mars-1"])
    assert got.exit_code == 1, got.output
    [line] = got.stderr.splitlines()
    assert "no such AWS region 'mars-1': this emulator serves the regions botocore knows" in line
    assert "<" not in line  # no HTML page
    assert "Traceback" not in capfd.readouterr().err  # nor a traceback in the server's log (moto was never asked)
