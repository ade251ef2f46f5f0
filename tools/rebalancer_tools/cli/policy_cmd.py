"""`rebalancer policy init --cluster C [-o policy.yaml]`: a policy matching the cluster's quotas today, to start from
(rebalancer_tools.cli.policy_init). Reads only; `--snapshot FILE` works offline.

`rebalancer policy push FILE --appconfig APP/ENV/PROFILE`: the policy of a stack deployed with
PolicySource=appconfig, as a hosted configuration version deployed with the stack's strategy
(rebalancer_tools.packaging.appconfig_policy); checked here first, so a bad policy is refused before anything is
sent."""

from __future__ import annotations

from pathlib import Path

import click

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file, parse_document
from rebalancer.parsing.validation import load_model
from rebalancer_tools.cli.live_cmds import LiveSource, live_options
from rebalancer_tools.cli.params import profile_option


@click.group()
def policy() -> None:
    """Write a policy to start from, or publish one to AppConfig."""


@policy.command()
@live_options(required=False)
@click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
              help="Or a saved snapshot (`rebalancer snapshot`) instead of the live cluster.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Write the policy here (default: stdout); an existing file is not overwritten.")
def init(live: LiveSource | None, snapshot_file: str | None, output: str | None) -> None:
    """The policy of a cluster as it is today: weights from its quotas, their settings, mode dry-run."""
    from datetime import UTC, datetime

    from rebalancer_tools.cli.policy_init import policy_text

    if (live is None) == (snapshot_file is None):
        raise InvalidInput("give exactly one of --cluster or --snapshot", field="--cluster")
    if output and Path(output).exists():
        raise InvalidInput("exists already: choose another file or remove it", field="--output", value=output)
    snapshot = live.collect(datetime.now(UTC)).snapshot if live is not None else \
        load_model_file(Snapshot, str(snapshot_file))
    text = policy_text(snapshot)
    load_model(Policy, parse_document(text, "the written policy"), "the written policy")  # it loads, or we say so
    if output:
        Path(output).write_text(text)
        click.echo(f"policy of {snapshot.cluster.ClusterName} written to {output} (mode dry-run); next: "
                   f"rebalancer diff --cluster {snapshot.cluster.ClusterName} --policy {output}", err=True)
    else:
        click.echo(text, nl=False)


@policy.command()
@click.argument("policy_file", type=click.Path(dir_okay=False))
@click.option("--appconfig", "target", required=True, metavar="APP/ENV/PROFILE",
              help="The stack's PolicyAppConfig output: AppConfig application, environment and profile ids.")
@click.option("--strategy", default="AppConfig.AllAtOnce", show_default=True,
              help="Deployment strategy id (the stack's PolicyDeploymentStrategy output).")
@click.option("--description", default="", help="Recorded with the hosted version and the deployment.")
@click.option("--cluster", help="Check the policy against this cluster first (default: the configuration profile's "
                                "name, which the stack gives its cluster's): a team name close to an existing "
                                "team's is refused, guarantees above its healthy capacity are reported.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@profile_option("aws_profile")
def push(policy_file: str, target: str, strategy: str, description: str, cluster: str | None, region: str | None,
         aws_profile: str | None) -> None:
    """Publish a policy to AppConfig: a hosted configuration version and its deployment."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.parsing.loading import POLICY_MAX_BYTES, read_text
    from rebalancer_tools.packaging import appconfig_policy as ac

    where = ac.Target.parse(target)
    text = read_text(policy_file, what="the policy", max_bytes=POLICY_MAX_BYTES)
    content, checked = ac.policy_json(text, policy_file)
    client = AwsClients(region=region, profile=aws_profile).client("appconfig")
    _check_against_cluster(checked, policy_file, cluster or ac.profile_name(client, where), region, aws_profile,
                           named=cluster is not None)
    done = ac.push(client, where, content, checked, strategy=strategy, description=description)
    click.echo(f"policy of {done.teams} teams ({done.size:,} bytes) pushed to {target}: hosted version "
               f"{done.version}, deployment {done.deployment} {done.state} (strategy {strategy})")


def _check_against_cluster(policy: Policy, source: str, cluster: str, region: str | None, profile: str | None, *,
                           named: bool) -> None:
    """As the planner and `diff` read the policy against the cluster: a team name close to an existing team's is
    refused (nothing is pushed), promises above its healthy capacity are said. A cluster the stack's profile names
    but that cannot be read is said and skipped; one named with --cluster must be read."""
    from rebalancer.errors import RebalancerError
    from rebalancer.planning.commitments import commitment_warnings
    from rebalancer.planning.team_names import check_team_names
    from rebalancer_tools.cli.diff_cmd import live_snapshot

    try:
        snapshot = live_snapshot(cluster, region, profile)
    except RebalancerError as e:
        if named:
            raise
        click.echo(f"warning: not checked against cluster {cluster} (the profile's name): {e}", err=True)
        return
    check_team_names(policy, (q.team for q in snapshot.quotas), source=source)
    for line in commitment_warnings(snapshot, policy):
        click.echo(f"warning: {cluster}: {line}", err=True)
