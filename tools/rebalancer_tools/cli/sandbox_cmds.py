"""The sandbox from the command line: `rebalancer emulator --seed-demo` serves it, with the controller, prints what
to export and then every email and Slack message the controller sends; `rebalancer emulator fail-node / heal-node /
add-demand / resize / run` drive a running one (found through $AWS_ENDPOINT_URL, as every other command finds it)."""

from __future__ import annotations

import logging
import shlex
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rebalancer.errors import InvalidInput, PermanentError
from rebalancer_tools.cli.params import RunTime, Whole

if TYPE_CHECKING:
    from rich.console import Console

    from rebalancer_tools.local.sandbox_controller import Delivered, RunReport

RUN_WAIT = 120  # seconds `run` waits for the sandbox's answer (it answers within its own RUN_TIMEOUT)


def _stop(*_: object) -> None:
    raise KeyboardInterrupt  # `kill PID` stops the sandbox as Ctrl-C does: servers closed, moto reset


def serve_sandbox(port: int, transition_reads: int, policy_file: str | None) -> None:
    from rebalancer_tools.cli.output import prose_console
    from rebalancer_tools.local.sandbox import open_sandbox

    policy, policy_text = _policy(policy_file)
    out = prose_console()
    # The handlers log JSON lines for CloudWatch; this terminal shows what they send people instead.
    logging.disable(logging.WARNING)
    signal.signal(signal.SIGTERM, _stop)
    try:
        with open_sandbox(port, policy=policy_text, listener=lambda m: show_message(out, m)) as sandbox:
            sandbox.emulator.set_transition_reads(transition_reads)
            _announce(sandbox, policy)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                click.echo("stopping")
    except OSError as e:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None


def _policy(policy_file: str | None) -> tuple[Path, str]:
    """The controller's policy: the file (checked as the plan step would check it) and its text."""
    from rebalancer.domain.policy import Policy
    from rebalancer.parsing.loading import POLICY_MAX_BYTES, load_model_file, read_text
    path = Path(policy_file) if policy_file else _default_policy()
    load_model_file(Policy, path)  # a policy the plan step would refuse: one line now, not a failed run later
    return path, read_text(path, what="policy", max_bytes=POLICY_MAX_BYTES)


def _default_policy() -> Path:
    from rebalancer_tools.cli.demo_cmd import DEFAULT_POLICY
    from rebalancer_tools.packaging.template import find_root

    return find_root() / DEFAULT_POLICY


def _announce(sandbox: Any, policy: Path | None = None) -> None:
    from rebalancer_tools.local.sandbox import CALLER, SECOND_ADMIN

    groups = ", ".join(f"{g.name} {g.count}× {g.instance_type}" for g in _groups())
    click.echo(f"sandbox listening on {sandbox.endpoint}: HyperPod cluster {sandbox.cluster} ({groups}) with "
               f"{len(sandbox.seeded.quota_ids)} team quotas, its EKS cluster's Kubernetes API (Kueue, Nodes) on "
               f"the same address, audit table {sandbox.table}")
    if sandbox.controller is not None:
        click.echo(f"the controller (state machine and handlers) manages {sandbox.cluster} under {policy}; its "
                   f"approval page is served on {sandbox.controller.approval_api}; the emails and Slack messages "
                   "it sends are printed here")
    click.echo("in another shell:")
    for name, value in sandbox.environment().items():
        click.echo(f"  export {name}={value}")
    cluster = sandbox.cluster
    click.echo(f"  rebalancer snapshot --cluster {cluster} -o snap.json")
    # The controller's policy as a path that works from here: outside a checkout there is no examples/.
    shown = shlex.quote(_from_here(policy or _default_policy()))
    click.echo(f"  rebalancer plan --cluster {cluster} --policy {shown}")
    click.echo(f"  rebalancer emulator fail-node --group {_groups()[0].name}   # also: heal-node, add-demand, resize")
    if sandbox.controller is not None:
        click.echo("  rebalancer emulator run   # a controller run; what it asks, `rebalancer approvals` decides")
    me = CALLER.rsplit(":", 1)[-1]
    click.echo(f"you are {me}; a second admin, {SECOND_ADMIN.user}, approves what you request. Put its keys before a "
               "command to run it as them:")
    keys = " ".join(f"{k}={v}" for k, v in SECOND_ADMIN.environment().items())
    click.echo(f"  {keys} rebalancer reservations approve ID --cluster {cluster}")
    click.echo("Ctrl-C stops it.", nl=True)


def _from_here(path: Path) -> str:
    """`path` relative to the working directory when it lies under it (a checkout), else absolute (an install)."""
    resolved, here = path.resolve(), Path.cwd().resolve()
    return str(resolved.relative_to(here)) if resolved.is_relative_to(here) else str(resolved)


def show_message(out: Console, message: Delivered) -> None:
    """An email as its text under a rule (each link a line of its own, whole), a Slack message as Slack lays it
    out."""
    from rebalancer_tools.demo.narrative import RichStory

    if message.channel == "email":
        RichStory(out).email(message.subject, message.body)
    else:
        RichStory(out).slack(message.post)


def _groups() -> Any:
    from rebalancer_tools.emulator import DEMO

    return DEMO.groups


def _endpoint(endpoint: str | None) -> str:
    if not endpoint:
        raise InvalidInput("no sandbox: export AWS_ENDPOINT_URL as `rebalancer emulator --seed-demo` prints it, "
                           "or pass --endpoint", field="--endpoint")
    return endpoint


def _call(endpoint: str | None, route: str, body: dict[str, Any], *, timeout: float = 30) -> dict[str, Any]:
    from rebalancer_tools.local.sandbox import call

    where = _endpoint(endpoint)
    try:
        return call(where, route, body, timeout=timeout)
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
@click.option("--name", help="The workload's name, one workload per name in a team (default: <team>-job-N).")
@click.option("--runs-for", type=RunTime(), help="The run time it declares, a Go duration such as 6h or 1h30m "
              "(its kueue.x-k8s.io/estimated-duration annotation, which the estimated starts read).")
@ENDPOINT
def add_demand(team: str, instance_type: str, accelerators: int, pods: int, name: str | None,
               runs_for: str | None, endpoint: str | None) -> None:
    """Queue a Kueue workload for a team (what the controller reads as demand): admitted now when the pool has
    accelerators nobody runs on or waits for, else pending."""
    got = _call(endpoint, "add-demand", {"team": team, "instance_type": instance_type,
                                         "accelerators": accelerators, "pods": pods, "name": name,
                                         "runs_for": runs_for})
    declared = f", declaring {runs_for}" if runs_for else ""
    state = "admitted" if got.get("admitted") else "pending"
    click.echo(f"workload {got['workload']} {state} for {team}: {pods} × {accelerators} on {instance_type}{declared}")


@click.command("resize")
@click.option("--group", required=True, help="The instance group.")
@click.option("--count", type=Whole(0, 1000), required=True, help="Its new instance count.")
@ENDPOINT
def resize(group: str, count: int, endpoint: str | None) -> None:
    """Resize an instance group (nodes added or removed, as UpdateCluster would)."""
    _call(endpoint, "resize", {"group": group, "count": count})
    click.echo(f"instance group {group} resized to {count}")


@click.command("run")
@ENDPOINT
def run(endpoint: str | None) -> None:
    """A controller run, as the schedule starts one: it plans, then applies, or asks an admin and waits. Prints
    the run's states and the messages it sent (each link on a line of its own)."""
    from rebalancer_tools.cli.output import prose_console
    from rebalancer_tools.local.sandbox_controller import RunReport

    report = RunReport.model_validate(_call(endpoint, "run", {}, timeout=RUN_WAIT))
    out = prose_console()
    for line in report_lines(report):
        out.print(line, soft_wrap=True, highlight=False, markup=False)
    for message in report.messages:
        show_message(out, message)
    if report.waiting:
        for line in decide_lines(report):
            out.print(line, soft_wrap=True, highlight=False, markup=False)


def report_lines(report: RunReport) -> list[str]:
    """What a run did, in a line or two."""
    from rebalancer_tools.reports.run_ids import short_run

    cluster = report.cluster
    if not report.started:
        return [f"no run started: {report.reason}"]
    head = f"run {short_run(report.execution, cluster)} of {cluster}: {' → '.join(report.states)}"
    if report.waiting and report.decide_by is not None:
        return [head, f"it waits for an admin: approval {report.approval_id}, to decide by "
                      f"{report.decide_by:%Y-%m-%d %H:%M} UTC"]
    if report.status == "RUNNING":
        return [head, f"still running (`rebalancer history --cluster {cluster}` shows it when it ends)"]
    ended = [head, f"it ended: {report.states[-1] if report.states else report.status} ({report.status})"]
    return ended + ([report.headline] if report.headline else [])


def decide_lines(report: RunReport) -> list[str]:
    """How to decide what a run asks: the commands, each on a line of its own, and the page."""
    from rebalancer_tools.reports.run_ids import short_run

    cluster = report.cluster
    run_id = short_run(report.execution, cluster)
    return ["decide it here (recorded with your AWS identity), or open the email's Approve or Reject link:",
            f"  rebalancer approvals approve {run_id} --cluster {cluster}",
            f"  rebalancer approvals reject {run_id} --cluster {cluster}"]


DRIVE_COMMANDS = (fail_node, heal_node, add_demand, resize, run)
