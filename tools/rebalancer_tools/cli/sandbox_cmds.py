"""The sandbox from the command line: `rebalancer emulator --seed-demo` serves it and prints what to export;
`rebalancer emulator fail-node / heal-node / add-demand / resize` drive a running one (found through
$AWS_ENDPOINT_URL, as every other command finds it)."""

from __future__ import annotations

import signal
import time
from typing import Any

import click

from rebalancer.errors import InvalidInput, PermanentError
from rebalancer_tools.cli.params import Whole


def _stop(*_: object) -> None:
    raise KeyboardInterrupt  # `kill PID` stops the sandbox as Ctrl-C does: servers closed, moto reset


def serve_sandbox(port: int, transition_reads: int) -> None:
    from rebalancer_tools.sandbox import open_sandbox

    signal.signal(signal.SIGTERM, _stop)
    try:
        with open_sandbox(port) as sandbox:
            sandbox.emulator.set_transition_reads(transition_reads)
            _announce(sandbox)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                click.echo("stopping")
    except OSError as e:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None


def _announce(sandbox: Any) -> None:
    groups = ", ".join(f"{g.name} {g.count}× {g.instance_type}" for g in _groups())
    click.echo(f"sandbox listening on {sandbox.endpoint}: HyperPod cluster {sandbox.cluster} ({groups}) with "
               f"{len(sandbox.seeded.quota_ids)} team quotas, its EKS cluster's Kubernetes API (Kueue, Nodes) on "
               f"the same address, audit table {sandbox.table}")
    click.echo("in another shell:")
    for name, value in sandbox.environment().items():
        click.echo(f"  export {name}={value}")
    cluster = sandbox.cluster
    click.echo(f"  rebalancer snapshot --cluster {cluster} -o snap.json")
    click.echo(f"  rebalancer plan --cluster {cluster} --policy examples/demo-policy.yaml")
    click.echo(f"  rebalancer emulator fail-node --group {_groups()[0].name}   # also: heal-node, add-demand, resize")
    click.echo("Ctrl-C stops it.", nl=True)


def _groups() -> Any:
    from rebalancer_tools.emulator import DEMO

    return DEMO.groups


def _endpoint(endpoint: str | None) -> str:
    if not endpoint:
        raise InvalidInput("no sandbox: export AWS_ENDPOINT_URL as `rebalancer emulator --seed-demo` prints it, "
                           "or pass --endpoint", field="--endpoint")
    return endpoint


def _call(endpoint: str | None, route: str, body: dict[str, Any]) -> dict[str, Any]:
    from rebalancer_tools.sandbox import call

    where = _endpoint(endpoint)
    try:
        return call(where, route, body)
    except LookupError as e:
        raise InvalidInput(str(e), field=route) from None
    except ValueError as e:
        raise InvalidInput(str(e), field=route) from None
    except OSError as e:
        raise PermanentError(f"no sandbox answers at {where}: {e}") from None


ENDPOINT = click.option("--endpoint", envvar="AWS_ENDPOINT_URL", help="The sandbox (env AWS_ENDPOINT_URL).")


@click.command("fail-node")
@click.option("--node", "node_id", help="The node's instance id (see `aws sagemaker list-cluster-nodes`).")
@click.option("--group", help="Or the first running node of this instance group.")
@ENDPOINT
def fail_node(node_id: str | None, group: str | None, endpoint: str | None) -> None:
    """A node fails its health check: HyperPod reports Failure, Kubernetes marks it NotReady."""
    if (node_id is None) == (group is None):
        raise InvalidInput("give --node ID or --group NAME", field="--node")
    failed = _call(endpoint, "fail-node", {"node_id": node_id, "group": group})["node_id"]
    click.echo(f"node {failed} failed (HyperPod: Failure; Kubernetes: NotReady)")


@click.command("heal-node")
@click.option("--node", "node_id", required=True, help="The node's instance id.")
@ENDPOINT
def heal_node(node_id: str, endpoint: str | None) -> None:
    """A failed node is replaced: Running and Ready again."""
    _call(endpoint, "heal-node", {"node_id": node_id})
    click.echo(f"node {node_id} running again")


@click.command("add-demand")
@click.option("--team", required=True, help="The team whose queue gets the work.")
@click.option("--instance-type", required=True, help="Where it must run, e.g. ml.p5.48xlarge.")
@click.option("--accelerators", type=Whole(1, 1024), required=True, help="Accelerators per pod.")
@click.option("--pods", type=Whole(1, 1024), default=1, show_default=True, help="Pods of the workload.")
@click.option("--name", help="The workload's name (default: <team>-job-N).")
@ENDPOINT
def add_demand(team: str, instance_type: str, accelerators: int, pods: int, name: str | None,
               endpoint: str | None) -> None:
    """Queue a pending Kueue workload for a team (what the controller reads as demand)."""
    got = _call(endpoint, "add-demand", {"team": team, "instance_type": instance_type,
                                         "accelerators": accelerators, "pods": pods, "name": name})
    click.echo(f"workload {got['workload']} pending for {team}: {pods} × {accelerators} on {instance_type}")


@click.command("resize")
@click.option("--group", required=True, help="The instance group.")
@click.option("--count", type=Whole(0, 1000), required=True, help="Its new instance count.")
@ENDPOINT
def resize(group: str, count: int, endpoint: str | None) -> None:
    """Resize an instance group (nodes added or removed, as UpdateCluster would)."""
    _call(endpoint, "resize", {"group": group, "count": count})
    click.echo(f"instance group {group} resized to {count}")


DRIVE_COMMANDS = (fail_node, heal_node, add_demand, resize)
