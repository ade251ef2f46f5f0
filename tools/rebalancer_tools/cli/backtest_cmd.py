"""`rebalancer backtest`: what each policy would have done on a cluster's recorded history, side by side."""

from __future__ import annotations

from pathlib import Path

import click

from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.replay import NOT_REPLAYED
from rebalancer_tools.backtest.report import side_by_side, write_report
from rebalancer_tools.backtest.run import load_policy, policy_names, run_backtest
from rebalancer_tools.cli.output import console
from rebalancer_tools.cli.params import InputFile, OutputDir


@click.command()
@click.option("--history", "history_path", required=True, type=InputFile(),
              help="JSON lines from `rebalancer history export`.")
@click.option("--policy", "policy_paths", required=True, multiple=True, type=InputFile(),
              help="A policy file (YAML or JSON); repeat to compare. The first one's weights set the entitlement.")
@click.option("--report", "report_dir", type=OutputDir(),
              help="Write summary.json, summary.md and one PNG timeline per team into this folder.")
def backtest(history_path: str, policy_paths: tuple[str, ...], report_dir: str | None) -> None:
    """Replay the production planner over the recorded states under each policy. Writes nothing to any cluster."""
    history = load_history(history_path)
    policies = list(zip(policy_names(policy_paths), [load_policy(p) for p in policy_paths], strict=True))
    result = run_backtest(history, policies)
    first, last = result.states[0].at, result.states[-1].at
    title = (f"backtest of {history.cluster}: {len(result.states)} states, {first:%Y-%m-%d %H:%M} to "
             f"{last:%Y-%m-%d %H:%M} UTC")
    click.echo(title)
    console(100).print(side_by_side(result.replays, ""))
    if any(r.budgets for r in result.replays):
        click.echo("budgets replayed from the recorded use; not replayed: " + "; ".join(NOT_REPLAYED))
    gaps = result.replays[0].gaps
    if gaps:
        click.echo(f"{gaps} gap(s) in the history: each counted as one typical interval")
    if report_dir:
        written = write_report(Path(report_dir), title, result.states, result.replays)
        click.echo(f"report: {len(written)} files in {report_dir} (summary.md, summary.json, team-*.png)")
