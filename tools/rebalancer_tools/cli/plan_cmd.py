"""`rebalancer plan`: the plan for a snapshot and a policy, as a table for people, or as JSON (the whole plan) or
CSV (its rows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli.live_cmds import LiveSource, live_options
from rebalancer_tools.cli.output import console, format_option
from rebalancer_tools.cli.params import InputFile
from rebalancer_tools.render import plan_table, render_plan


def load_snapshot(snapshot_file: str | None, live: LiveSource | None = None) -> Snapshot:
    """The snapshot the options name: a file, or read live from `--cluster`."""
    if live is not None and snapshot_file is not None:
        raise InvalidInput("give --snapshot or --cluster, not both", field="--snapshot", value=snapshot_file)
    if live is not None:
        return live.collect(datetime.now(UTC)).snapshot
    if snapshot_file is None:
        raise InvalidInput("a snapshot is required (--snapshot FILE, or --cluster NAME to read it live)",
                           field="--snapshot")
    return load_model_file(Snapshot, snapshot_file)


def parse_now(value: str | None, snapshot: Snapshot) -> datetime:
    """`--now`, or the time the snapshot was taken: a plan is reproducible from its inputs."""
    if value is None:
        return snapshot.taken_at
    try:
        now = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"not an ISO-8601 time (got {value!r})", field="--now", value=value) from None
    return now if now.tzinfo else now.replace(tzinfo=UTC)


@click.command()
@click.option("--snapshot", "snapshot_file", type=InputFile(), help="Snapshot JSON file.")
@click.option("--policy", "policy_file", required=True, type=InputFile(),
              help="Policy file (YAML or JSON).")
@format_option()
@click.option("--now", help="Planning time, ISO-8601 (default: the snapshot's taken_at). Drives cooldowns.")
@live_options(required=False)
def plan(snapshot_file: str | None, policy_file: str, fmt: str, now: str | None, live: LiveSource | None) -> None:
    """Plan quota changes for a cluster snapshot under a policy. Writes nothing."""
    snapshot = load_snapshot(snapshot_file, live)
    policy = load_model_file(Policy, policy_file)
    # A snapshot alone: no audit log (versions) and no metered budget use; `apply` reads both from the table.
    result = make_plan(snapshot, policy, parse_now(now, snapshot), context=planning_context(snapshot, policy))
    if fmt == "json":  # the whole plan: its rows, requests, warnings
        click.echo(json.dumps(result.output(), indent=2))
    elif fmt == "csv":  # its rows
        click.echo(plan_table(result).csv(), nl=False)
    else:
        render_plan(result, console())
