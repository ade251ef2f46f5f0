"""`rebalancer backtest`: what each policy would have done on a cluster's recorded history, side by side."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rebalancer_tools.backtest.evidence import covered, too_thin
from rebalancer_tools.backtest.history import load_history
from rebalancer_tools.backtest.replay import NOT_REPLAYED
from rebalancer_tools.backtest.report import side_by_side, write_report
from rebalancer_tools.backtest.run import load_policy, policy_names, run_backtest
from rebalancer_tools.cli.output import emit, format_option
from rebalancer_tools.cli.params import InputFile, OutputDir


@click.command()
@click.option("--history", "history_path", required=True, type=InputFile(),
              help="JSON lines from `rebalancer history export`.")
@click.option("--policy", "policy_paths", required=True, multiple=True, type=InputFile(),
              help="A policy file (YAML or JSON); repeat to compare. The first one's weights set the entitlement.")
@click.option("--report", "report_dir", type=OutputDir(),
              help="Write summary.json, summary.md and one PNG timeline per team into this folder.")
@format_option()
def backtest(history_path: str, policy_paths: tuple[str, ...], report_dir: str | None, fmt: str) -> None:
    """Replay the production planner over the recorded states under each policy. Writes nothing to any cluster."""
    history = load_history(history_path)
    policies = list(zip(policy_names(policy_paths), [load_policy(p) for p in policy_paths], strict=True))
    result = run_backtest(history, policies)
    title = f"backtest of {history.cluster}: {covered(result.states)}"
    thin = too_thin(result.states)
    notes = [f"warning: {thin}"] if thin else []
    if any(r.budgets for r in result.replays):
        notes.append("budgets replayed from the recorded use; not replayed: " + "; ".join(NOT_REPLAYED))
    gaps = result.replays[0].gaps
    if gaps:
        notes.append(f"{gaps} gap(s) in the history: each counted as one typical interval")
    table = side_by_side(result.replays, title)
    if fmt == "json":
        click.echo(json.dumps({"title": title, "too_thin": thin, "policies": [r.summary() for r in result.replays]},
                              indent=2, sort_keys=True, default=str))
    else:
        emit(table, fmt)
    to_stderr = fmt != "table"  # JSON and CSV stay parseable: what is said about them goes to stderr
    for note in notes:
        click.echo(note, err=to_stderr)
    if report_dir:
        written = write_report(Path(report_dir), title, result.states, result.replays, notes=notes)
        click.echo(f"report: {len(written)} files in {report_dir} (summary.md, summary.json, team-*.png)",
                   err=to_stderr)
