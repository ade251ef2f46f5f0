"""`rebalancer emulator`: the HyperPod task-governance emulator as a server on 127.0.0.1. With --seed-demo it is the
sandbox (rebalancer_tools.local.sandbox): the demo cluster, its Kubernetes API, EKS side, metrics and audit table, and
the controller, so that every command works on it; `rebalancer emulator fail-node / heal-node / add-demand / resize /
run` drive it."""

from __future__ import annotations

import click

from rebalancer.errors import InvalidInput
from rebalancer_tools.cli.params import InputFile, Whole
from rebalancer_tools.cli.sandbox_cmds import DRIVE_COMMANDS
from rebalancer_tools.emulator import DEFAULT_REGION, DEMO, Emulator
from rebalancer_tools.emulator.server import EmulatorServer


@click.group(invoke_without_command=True)
@click.option("--port", type=Whole(0, 65535), default=5000, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--seed-demo", "seed", is_flag=True,
              help=f"The sandbox: the demo cluster {DEMO.cluster_name!r} with team quotas, its Kubernetes API "
                   "(Kueue, Nodes), EKS side, metrics and audit table.")
@click.option("--transition-reads", type=Whole(0, 1000), default=0, show_default=True,
              help="Describe calls that still see Creating / Updating after each write.")
@click.option("--policy", "policy_file", type=InputFile(),
              help="With --seed-demo: the policy the sandbox's controller runs with (default: "
                   "examples/demo-policy.yaml).")
@click.pass_context
def emulator(ctx: click.Context, port: int, seed: bool, transition_reads: int, policy_file: str | None) -> None:
    """Serve SageMaker (moto) with compute quotas and scheduler configs; point the AWS CLI or boto3 at it."""
    if ctx.invoked_subcommand is not None:
        return
    if seed:
        from rebalancer_tools.cli.sandbox_cmds import serve_sandbox

        serve_sandbox(port, transition_reads, policy_file)
        return
    if policy_file is not None:
        raise InvalidInput("the sandbox controller's policy: give --seed-demo too", field="--policy",
                           value=policy_file)
    server = EmulatorServer("127.0.0.1", port)
    try:
        server.start()
    except OSError as e:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None
    emu = Emulator()
    emu.set_transition_reads(transition_reads)
    endpoint = server.endpoint
    click.echo(f"HyperPod emulator listening on {endpoint} (region {DEFAULT_REGION}, account {emu.account_id})")
    click.echo("point clients at it:")
    click.echo(f"  export AWS_ENDPOINT_URL={endpoint}")
    click.echo(f"  export AWS_DEFAULT_REGION={DEFAULT_REGION} AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing")
    click.echo(f"  aws sagemaker list-compute-quotas   # controls: POST {endpoint}/_emulator/...")
    click.echo("Ctrl-C stops it.")
    try:
        server.wait()
    except KeyboardInterrupt:
        click.echo("stopping")
    finally:
        server.stop()


for _command in DRIVE_COMMANDS:
    emulator.add_command(_command)
