"""`rebalancer plan`: the plan for a snapshot and a policy, as a table for people or as JSON.

The planning context is the controller's whenever it can be: given the table (--table / --stack /
$REBALANCER_TABLE), `app.workflow.run_plan.context_for` reads it as the plan step does; given a context recorded
beside the snapshot (--context: `snapshot --context-output`, `history --snapshot-of RUN --context-output`), the
plan is made from it at the time it was recorded, exactly as the controller made it. Without either, from the
snapshot alone, and it says so. As a table for people, or as JSON (the whole plan) or CSV (its rows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click
from click.core import ParameterSource

from rebalancer.domain.policy import Policy
from rebalancer.domain.recorded_context import RecordedContext, policy_digest
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli.live_cmds import NO_TABLE_CONTEXT, LiveSource, context_table_options, live_options
from rebalancer_tools.cli.output import console, format_option
from rebalancer_tools.cli.params import InputFile
from rebalancer_tools.reports.render import plan_table, render_plan


def _now() -> datetime:
    return datetime.now(UTC)


def load_snapshot(snapshot_file: str | None, live: LiveSource | None = None) -> Snapshot:
    """The snapshot the options name: a file, or read live from `--cluster`."""
    if live is not None and snapshot_file is not None:
        raise InvalidInput("give --snapshot or --cluster, not both", field="--snapshot", value=snapshot_file)
    if live is not None:
        return live.collect(_now()).snapshot
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


def recorded_for(context_file: str, snapshot: Snapshot, policy: Policy) -> tuple[RecordedContext, Policy]:
    """The recorded context, checked to be this snapshot's, and the policy in the mode it was planned in. A context
    recorded under another policy is used, with a warning: the plan is then not the controller's."""
    recorded = load_model_file(RecordedContext, context_file)
    if (recorded.cluster, recorded.taken_at) != (snapshot.cluster.ClusterName, snapshot.taken_at):
        raise InvalidInput(f"the context was recorded for the snapshot of {recorded.cluster} taken at "
                           f"{recorded.taken_at.isoformat()}, not this one ({snapshot.cluster.ClusterName} at "
                           f"{snapshot.taken_at.isoformat()})", field="--context", value=context_file)
    if recorded.policy_sha256 != policy_digest(policy):
        click.echo(f"warning: the context was recorded under another policy (sha256 {recorded.policy_sha256[:12]}…, "
                   f"this one {policy_digest(policy)[:12]}…): this plan is not the one the controller made",
                   err=True)
    if recorded.mode != policy.mode:
        click.echo(f"planned in mode {recorded.mode}, as the context was (the policy says {policy.mode}: a "
                   "deployment's ModeOverride)", err=True)
        policy = policy.model_copy(update={"mode": recorded.mode})
    return recorded, policy


@click.command()
@click.option("--snapshot", "snapshot_file", type=InputFile(), help="Snapshot JSON file.")
@click.option("--context", "context_file", type=InputFile(),
              help="With --snapshot: the planning context recorded beside it (`snapshot --context-output`, "
                   "`history --snapshot-of RUN --context-output`): plan exactly as the controller did.")
@click.option("--policy", "policy_file", required=True, type=InputFile(),
              help="Policy file (YAML or JSON).")
@format_option()
@click.option("--now", help="Planning time, ISO-8601 (default: the context's planning time, else the snapshot's "
                            "taken_at). Drives cooldowns.")
@context_table_options
@live_options(required=False)
def plan(snapshot_file: str | None, context_file: str | None, policy_file: str, fmt: str, now: str | None,
         table: str | None, stack: str | None, live: LiveSource | None) -> None:
    """Plan quota changes for a cluster snapshot under a policy. Writes nothing."""
    from rebalancer.app.workflow import run_plan
    from rebalancer_tools.cli.live_cmds import open_run_log

    if context_file and snapshot_file is None:
        raise InvalidInput("--context goes with --snapshot (the snapshot it was recorded beside)", field="--context",
                           value=context_file)
    if context_file and click.get_current_context().get_parameter_source("table") is ParameterSource.ENVIRONMENT:
        table = None  # $REBALANCER_TABLE names the table to read when nothing else gives the context
    if context_file and (table or stack):
        raise InvalidInput("give --context or the table (--table / --stack / $REBALANCER_TABLE), not both: the "
                           "context is what the table held when it was recorded", field="--context",
                           value=context_file)
    log = None if context_file else open_run_log(live, table, stack)  # a wrong table fails before the reads
    snapshot = load_snapshot(snapshot_file, live)
    policy = load_model_file(Policy, policy_file)
    if context_file:
        recorded, policy = recorded_for(context_file, snapshot, policy)
        at = parse_now(now, snapshot) if now is not None else recorded.planned_at
        result = make_plan(snapshot, policy, at, context=recorded.context())
    else:
        assert log is not None
        result = run_plan.make_run_plan(snapshot, policy, parse_now(now, snapshot), store=log.store).plan
        if not log.recorded:  # said of a plan made: bad input is refused before it
            click.echo(f"warning: {NO_TABLE_CONTEXT}", err=True)
    if fmt == "json":  # the whole plan: its rows, requests, warnings
        click.echo(json.dumps(result.output(), indent=2))
    elif fmt == "csv":  # its rows
        click.echo(plan_table(result).csv(), nl=False)
    else:
        render_plan(result, console())
