"""`rebalancer simulate`: replay a job trace under each quota strategy and compare them."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rebalancer.errors import InvalidInput
from rebalancer.loading import load_model_file
from rebalancer.policy import Policy
from rebalancer_tools.simulator import STRATEGIES, Failures, Scenario, StrategyResult, run_strategy
from rebalancer_tools.simulator.node_events import load_node_events
from rebalancer_tools.simulator.teams import default_teams, load_teams
from rebalancer_tools.simulator.trace import load_trace


def _strategies(raw: str) -> list[str]:
    names = [s.strip() for s in raw.split(",") if s.strip()]
    for s in names:
        if s not in STRATEGIES:
            raise InvalidInput(f"unknown strategy {s!r} (choose from {', '.join(STRATEGIES)})",
                               field="--strategies", value=s)
    if not names:
        raise InvalidInput("no strategy given", field="--strategies", value=raw)
    return names


def _positive(value: float | None, flag: str) -> None:
    if value is not None and value <= 0:
        raise InvalidInput(f"must be above 0, got {value:g}", field=flag, value=value)


def _table(capacity: int, results: dict[str, StrategyResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    from rebalancer_tools.simulator.report import COLUMNS, cells

    table = Table(title=f"{capacity} GPUs", title_justify="left")
    for i, (_, head) in enumerate(COLUMNS):
        table.add_column(head, justify="left" if i == 0 else "right")
    for r in results.values():
        table.add_row(*cells(r))
    Console(width=160).print(table)


@click.command()
@click.option("--trace", "trace_path", required=True, type=click.Path(dir_okay=False),
              help="CSV: job_id,team,submit_s,duration_s,gpus.")
@click.option("--gpus", type=int, default=1024, show_default=True, help="Cluster size in GPUs (whole nodes).")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--teams", "teams_path", type=click.Path(dir_okay=False),
              help="CSV team,weight,guarantee. Default: equal weights, quotas proportional to GPU-hours.")
@click.option("--strategies", default=",".join(STRATEGIES), show_default=True)
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False),
              help="Policy for the rebalancer strategy. Default: the teams' weights, half their quota guaranteed.")
@click.option("--controller-interval-minutes", type=float, default=15, show_default=True)
@click.option("--apply-delay-minutes", type=float, default=2, show_default=True)
@click.option("--approval-minutes", type=float, default=0, show_default=True,
              help="Extra delay of a plan that requires approval (until an admin approves it).")
@click.option("--checkpoint-minutes", type=float, default=0, show_default=True,
              help="Checkpoint interval of jobs; 0: a preempted job loses all its work.")
@click.option("--node-mtbf-hours", type=float, help="Mean time between failures of each node (default: none).")
@click.option("--node-repair-hours", type=float, default=4, show_default=True)
@click.option("--node-events", "node_events_path", type=click.Path(dir_okay=False),
              help="CSV time_s,node,event (fail|repair): explicit node failures and repairs.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--report", "report_dir", type=click.Path(file_okay=False), help="Write report.md and PNG plots here.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def simulate(trace_path: str, gpus: int, gpus_per_node: int, teams_path: str | None, strategies: str,
             policy_path: str | None, controller_interval_minutes: float, apply_delay_minutes: float,
             approval_minutes: float, checkpoint_minutes: float, node_mtbf_hours: float | None,
             node_repair_hours: float, node_events_path: str | None, seed: int, fmt: str, report_dir: str | None,
             no_progress: bool) -> None:
    """Replay a job trace on a simulated HyperPod cluster under each quota strategy and compare the outcomes."""
    names = _strategies(strategies)
    if gpus_per_node <= 0 or gpus < gpus_per_node or gpus % gpus_per_node:
        raise InvalidInput(f"must be a positive multiple of --gpus-per-node ({gpus_per_node}), got {gpus}",
                           field="--gpus", value=gpus)
    _positive(controller_interval_minutes, "--controller-interval-minutes")
    _positive(node_mtbf_hours, "--node-mtbf-hours")
    _positive(node_repair_hours, "--node-repair-hours")
    for flag, value in (("--apply-delay-minutes", apply_delay_minutes), ("--approval-minutes", approval_minutes),
                        ("--checkpoint-minutes", checkpoint_minutes)):
        if value < 0:
            raise InvalidInput(f"must not be negative, got {value:g}", field=flag, value=value)
    jobs = load_trace(trace_path)
    teams = load_teams(teams_path) if teams_path else default_teams(jobs, gpus, gpus_per_node)
    policy = load_model_file(Policy, policy_path) if policy_path else None
    explicit = load_node_events(node_events_path, gpus // gpus_per_node) if node_events_path else ()
    scenario = Scenario(
        jobs=jobs, teams=teams, nodes=gpus // gpus_per_node, gpus_per_node=gpus_per_node,
        controller_interval_s=controller_interval_minutes * 60, apply_delay_s=apply_delay_minutes * 60,
        approval_delay_s=approval_minutes * 60,
        checkpoint_s=checkpoint_minutes * 60, failures=Failures(mtbf_hours=node_mtbf_hours,
                                                                repair_hours=node_repair_hours, explicit=explicit),
        seed=seed, policy=policy)
    scenario.check()
    results = _run(scenario, names, progress=not no_progress and len(jobs) > 2000)
    if fmt == "json":
        click.echo(json.dumps({"capacity_gpus": scenario.capacity,
                               "strategies": {n: r.output() for n, r in results.items()}}, indent=2))
    else:
        _table(scenario.capacity, results)
    if report_dir:
        from rebalancer_tools.simulator.report import write_report

        setup = (f"Trace `{Path(trace_path).name}`: {len(jobs)} jobs, {len(teams)} teams; {scenario.capacity} GPUs "
                 f"({scenario.nodes} × {scenario.instance_type}); controller every {controller_interval_minutes:g} "
                 f"min, apply delay {apply_delay_minutes:g} min, approval {approval_minutes:g} min; checkpoint "
                 f"{checkpoint_minutes:g} min; node MTBF {node_mtbf_hours or 'none'} h; seed {seed}.")
        path = write_report(results, report_dir, title="Simulation report", setup=setup)
        click.echo(f"report: {path}", err=True)


def _run(scenario: Scenario, names: list[str], *, progress: bool) -> dict[str, StrategyResult]:
    if not progress:
        return {n: run_strategy(scenario, n) for n in names}
    from rich.console import Console
    from rich.progress import Progress, TaskID

    results: dict[str, StrategyResult] = {}
    with Progress(console=Console(stderr=True), transient=True) as bar:
        for n in names:
            task = bar.add_task(n, total=1.0)

            def update(fraction: float, task: TaskID = task) -> None:
                bar.update(task, completed=fraction)

            results[n] = run_strategy(scenario, n, progress=update)
    return results
