"""`rebalancer diff`: what differs between the policy and the cluster, field by field, and what of the policy the
cluster cannot keep (guarantees summing above a pool's or a family's healthy capacity). Read-only. A policy team
whose name looks like a typo of an existing team's is refused as the planner refuses it. Exit status 0 in sync, 3
drifted or not keepable (for scripts and CI); 1/2 on errors as every command."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

import click

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_document, load_model_file
from rebalancer.parsing.text import short
from rebalancer_tools.cli.params import InputFile, profile_option
from rebalancer_tools.reports.drift import find_drift

DRIFTED = 3
KNOWN_VERSIONS_MAX_BYTES = 1024 * 1024


def live_snapshot(cluster: str, region: str | None, profile: str | None) -> Snapshot:
    """Capacity, quotas and the scheduler config; no Kueue or CloudWatch (drift does not depend on demand)."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.sagemaker.cluster import SageMakerReader
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient

    sm = AwsClients(region=region, profile=profile).client("sagemaker")
    reader = SageMakerReader(sm)
    described = reader.cluster(cluster)
    return Snapshot(taken_at=datetime.now(UTC), cluster=described, nodes=reader.nodes(described.ClusterName),
                    quotas=reader.quotas(described.ClusterArn),
                    scheduler_config=SchedulerConfigClient(sm).read(described.ClusterArn))


def _known_versions(path: str | None) -> dict[str, int] | None:
    if path is None:
        return None
    data = load_document(path, what="known versions", max_bytes=KNOWN_VERSIONS_MAX_BYTES)
    if not isinstance(data, dict):
        raise InvalidInput('expected {"<team>": <version>, "(cluster)": <version>}', source=path,
                           value=type(data).__name__)
    for key, value in data.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidInput(f"a version is a whole number >= 0 (got {short(value)})", source=path,
                               field=str(key)[:40], value=value)
    return {str(k): int(v) for k, v in data.items()}


@click.command()
@click.option("--cluster", help="HyperPod cluster name (read live).")
@click.option("--snapshot", "snapshot_file", type=InputFile(),
              help="A snapshot file instead of --cluster.")
@click.option("--policy", "policy_file", required=True, type=InputFile(), help="Policy file.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@profile_option()
@click.option("--known-versions", type=InputFile(),
              help='JSON {team: version} our last apply left (from the audit); a quota at another version '
                   'was edited outside the rebalancer. Without it, every setting that differs may be a console edit.')
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def diff(cluster: str | None, snapshot_file: str | None, policy_file: str, region: str | None,
         profile: str | None, known_versions: str | None, fmt: str) -> None:
    """Compare a cluster's quotas and scheduler config with the policy. Exit 0 in sync, 3 drifted."""
    if (cluster is None) == (snapshot_file is None):
        raise InvalidInput("give exactly one of --cluster or --snapshot", field="--cluster", value=cluster)
    from rebalancer.planning.commitments import commitment_warnings
    from rebalancer.planning.team_names import check_team_names

    policy = load_model_file(Policy, policy_file)
    snapshot = (load_model_file(Snapshot, snapshot_file) if snapshot_file
                else live_snapshot(str(cluster), region, profile))
    check_team_names(policy, (q.team for q in snapshot.quotas), source=policy_file)
    drift = find_drift(snapshot, policy, known_versions=_known_versions(known_versions))
    unkept = commitment_warnings(snapshot, policy)
    name = snapshot.cluster.ClusterName
    if fmt == "json":
        click.echo(json.dumps({"cluster": name, "in_sync": not drift and not unkept,
                               "drift": [d.as_json() for d in drift], "cannot_keep": unkept}, indent=2, default=str))
    elif not drift and not unkept:
        click.echo(f"{name}: in sync with {policy_file}")
    else:
        if drift:
            click.echo(f"{name}: {len(drift)} difference(s) from {policy_file}")
        for d in drift:
            click.echo(f"  {d.line()}")
        if unkept:
            click.echo(f"{name}: {len(unkept)} promise(s) of {policy_file} the cluster cannot keep")
        for line in unkept:
            click.echo(f"  {line}")
    if drift or unkept:
        sys.exit(DRIFTED)
