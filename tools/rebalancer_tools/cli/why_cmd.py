"""`rebalancer why --cluster C --team T`: the team's quota per type and the reason of its last change, each pending
workload and why it waits, and what would let it start. By default from what the controller stored (its table: the
latest run's snapshot and plan, the audit log), as the Slack command `/rebalancer why <team>` answers; `--live`
collects the cluster now instead (SageMaker and Kueue, as `rebalancer snapshot`), planned with `--policy` if given,
the last changes still from the table when one is named. Works against real AWS (your credentials) and the sandbox
(AWS_ENDPOINT_URL, REBALANCER_TABLE)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

import click

from rebalancer.parsing.text import printable
from rebalancer_tools.cli.history_cmd import open_store, reading, table_options
from rebalancer_tools.cli.params import InputFile

if TYPE_CHECKING:
    from rebalancer.app.workflow.run_plan import RunPlan
    from rebalancer.domain.outlook import Outlook
    from rebalancer.domain.policy import Policy
    from rebalancer.domain.snapshot import Snapshot
    from rebalancer.planning.why import Explanation

# Audit records read back for the last changes: a terminal can wait longer than Slack (rebalancer.app.why.READ_MAX).
READ_MAX = 20_000


@click.command()
@table_options
@click.option("--team", required=True, help="The team (as its quota's TeamName).")
@click.option("--live", is_flag=True, help="Collect the cluster now instead of reading the latest stored run.")
@click.option("--policy", "policy_file", type=InputFile(),
              help="With --live: plan with this policy, so the plan's allocations and warnings are in the answer.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def why(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None, team: str,
        live: bool, policy_file: str | None, fmt: str) -> None:
    """Why the team's work is pending and why its quota last changed."""

    if policy_file and not live:
        from rebalancer.errors import InvalidInput

        raise InvalidInput("--policy needs --live (a stored run carries its own plan)", field="--policy")
    store = open_store(table, stack, region, profile) if table or stack or not live else None
    with reading(store.table_name if store else ""):
        answer = (_live(cluster, region, profile, team.strip(), policy_file, store) if live
                  else _stored(store, cluster, team.strip()))
    if fmt == "json":
        click.echo(json.dumps(answer.model_dump(mode="json"), indent=2, sort_keys=True))
        return
    for line in answer.lines():
        click.echo(printable(line))


def _stored(store: Any, cluster: str, team: str) -> Explanation:
    from rebalancer.app.why import why as stored_answer

    return stored_answer(store, cluster, team, read_max=READ_MAX)


def _live(cluster: str, region: str | None, profile: str | None, team: str, policy_file: str | None,
          store: Any) -> Explanation:
    from rebalancer.app.why import explain_team
    from rebalancer.app.workflow import run_plan
    from rebalancer.domain.policy import Policy
    from rebalancer.parsing.loading import load_model_file
    from rebalancer_tools.cli.live_cmds import LiveSource
    from rebalancer_tools.fakes.memory_store import MemoryStore

    now = datetime.now(UTC)
    snapshot = LiveSource(cluster=cluster, region=region, profile=profile, metrics_window_minutes=None) \
        .collect(now).snapshot
    planned, policy = None, None
    if policy_file:
        policy = load_model_file(Policy, policy_file)
        planned = run_plan.make_run_plan(snapshot, policy, now, store=store or MemoryStore())
    newest = islice(store.audit.newest(cluster), READ_MAX) if store is not None else iter(())
    return explain_team(snapshot, planned.plan if planned else None, list(newest)[::-1], team,
                        policy=policy, outlook=_outlook(store, cluster, snapshot, policy, planned))


def _outlook(store: Any, cluster: str, snapshot: Snapshot, policy: Policy | None, planned: RunPlan | None) -> Outlook:
    """The estimated starts and standing of a snapshot collected now: durations from the run history the table
    keeps (none without a table), received hours from its metering; the table's history is left as it is."""
    from rebalancer.app import budgets
    from rebalancer.app.workflow.outlook import outlook_of
    from rebalancer.domain.outlook import RunHistory
    from rebalancer.planning import eta, standing

    history = eta.history_after(store.durations.history(cluster) if store is not None else RunHistory(), snapshot)
    received = {}
    if store is not None and policy is not None:
        received = budgets.received(store.meter, cluster, standing.window_hours(policy), snapshot.taken_at)
    return outlook_of(snapshot, policy, planned, history, received)
