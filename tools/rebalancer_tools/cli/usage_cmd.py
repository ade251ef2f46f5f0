"""`rebalancer usage --cluster NAME --policy FILE`: each team's metered accelerator-hours in a period (own vs
borrowed), its budget, cost and forecast, from the controller's table. Read-only."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from rebalancer.domain.budget import check_year
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file
from rebalancer_tools.cli.history_cmd import audit_table_name, reading
from rebalancer_tools.cli.output import console, format_option
from rebalancer_tools.cli.params import InputFile, OutputFile, atomic_output, profile_option
from rebalancer_tools.reports import usage_report


@click.command()
@click.option("--cluster", required=True, help="HyperPod cluster name.")
@click.option("--policy", "policy_file", required=True, type=InputFile(),
              help="The cluster's policy (budgets and prices).")
@click.option("--period", help="A past or current period: 2026-11 (monthly budgets) or 2026-W48 (weekly). "
                               "Default: the current one.")
@format_option()
@click.option("--plot", "plot_file", type=OutputFile(),
              help="Also write a PNG of cumulative use against budget.")
@click.option("--at", "at_text", metavar="ISO-TIME", help="Report as of this instant, with a time zone (default: now).")
@click.option("--table", envvar="REBALANCER_TABLE", help="The controller's table (env REBALANCER_TABLE).")
@click.option("--stack", help="Or the SAM stack name: its TableName output is the table.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@profile_option()
def usage(cluster: str, policy_file: str, period: str | None, fmt: str, plot_file: str | None, at_text: str | None,
          table: str | None, stack: str | None, region: str | None, profile: str | None) -> None:
    """Accelerator-hours per team against its budget, with cost and a forecast to the period's end."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.dynamodb.store import Store

    policy = load_model_file(Policy, policy_file)
    now = _instant(at_text) if at_text else datetime.now(UTC)
    try:
        windows = [usage_report.window_for(t.budget, now, period) for t in policy.teams.values()] or \
                  [usage_report.window_for(None, now, period)]
    except ValueError as e:
        raise InvalidInput(str(e), field="--period", value=period) from None
    session = AwsClients(region=region, profile=profile).session
    store = Store(audit_table_name(session, table, stack), resource=session.resource("dynamodb"))
    since, until = min(w.start for w in windows), min(now, max(w.end for w in windows))
    with reading(store.table_name):
        facts = store.meter.facts(cluster, since, until)
    report = usage_report.rows(facts, policy, until, period)
    if not facts:
        click.echo(f"warning: nothing metered for {cluster} in {store.table_name} from {since:%Y-%m-%d %H:%M} UTC: "
                   "the controller's collect and observe steps meter each run; none has run since", err=True)
    if fmt == "table":
        console().print(usage_report.table(report))
    else:
        click.echo(usage_report.render(report, fmt))
    if plot_file:
        figure = usage_report.usage_figure(facts, policy, until, period)
        if figure is None:
            click.echo(f"no plot written to {plot_file}: no team used accelerators in the period", err=True)
            return
        from rebalancer_tools.reports import figures

        with atomic_output(plot_file, binary=True) as f:
            figures.save(figure, f)
        click.echo(f"plot written to {plot_file}", err=True)


def _instant(text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{text!r} is not an ISO time like 2026-11-30T12:00:00Z", field="--at", value=text) from None
    if at.tzinfo is None:
        raise InvalidInput(f"{text!r} has no time zone (add Z or +00:00)", field="--at", value=text)
    try:
        return check_year(at)
    except ValueError as e:
        raise InvalidInput(str(e), field="--at", value=text) from None
